package etcd

// The upstream storage conformance suite (k8s.io/apiserver/pkg/storage/testing)
// against this store on a real embedded etcd, called as upstream's
// pkg/storage/etcd3/store_test.go calls it.
//
// Where upstream turns on the AllowUnsafeMalformedObjectDeletion feature
// gate, these tests set Options.UnsafeCorruptObjectDeletion, and where
// upstream injects its private corruptObjectError, they inject the store's
// *CorruptValueError.
//
// Not run: the RangeStream variants of TestList and TestConsistentList
// (the store reads lists in pages only, it does not use etcd's RangeStream).

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"

	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

func TestCreate(t *testing.T) {
	ctx, store, client := testSetup(t)
	storagetesting.RunTestCreate(ctx, t, store, checkStorageInvariants(client.Client, store.codec))
}

func TestCreateWithTTL(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestCreateWithTTL(ctx, t, store)
}

func TestCreateWithKeyExist(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestCreateWithKeyExist(ctx, t, store)
}

func TestGet(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestGet(ctx, t, store)
}

func TestUnconditionalDelete(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestUnconditionalDelete(ctx, t, store)
}

func TestConditionalDelete(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestConditionalDelete(ctx, t, store)
}

func TestDeleteWithSuggestion(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestDeleteWithSuggestion(ctx, t, store)
}

func TestDeleteWithSuggestionAndConflict(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestDeleteWithSuggestionAndConflict(ctx, t, store)
}

func TestDeleteWithSuggestionOfDeletedObject(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestDeleteWithSuggestionOfDeletedObject(ctx, t, store)
}

func TestValidateDeletionWithSuggestion(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestValidateDeletionWithSuggestion(ctx, t, store)
}

func TestValidateDeletionWithOnlySuggestionValid(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestValidateDeletionWithOnlySuggestionValid(ctx, t, store)
}

func TestDeleteWithConflict(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestDeleteWithConflict(ctx, t, store)
}

func TestDeleteWithConflictAndMissingExpectedTransformOrDecodeError(t *testing.T) {
	codec := &etcdtest.FailingCodec{Codec: apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion)}
	ctx, store, _ := testSetup(t, withCodec(codec), withUnsafeCorruptObjectDeletion())
	storagetesting.RunTestDeleteWithConflictAndMissingExpectedTransformOrDecodeError(ctx, t, store, codec.SetFailing)
}

func TestDeleteWithConflictAndExpectedTransformError(t *testing.T) {
	transformer := &etcdtest.FailingTransformer{Transformer: storagetesting.NewPrefixTransformer([]byte(defaultTestPrefix), false)}
	ctx, store, _ := testSetup(t, withTransformer(transformer), withUnsafeCorruptObjectDeletion())
	storagetesting.RunTestDeleteExpectedTransformOrDecodeError(ctx, t, store, transformer.SetFailing)
}

func TestDeleteWithConflictAndExpectedDecodeError(t *testing.T) {
	codec := &etcdtest.FailingCodec{Codec: apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion)}
	ctx, store, _ := testSetup(t, withCodec(codec), withUnsafeCorruptObjectDeletion())
	storagetesting.RunTestDeleteExpectedTransformOrDecodeError(ctx, t, store, codec.SetFailing)
}

func TestDeleteWithSuggestionAndMissingExpectedTransformOrDecodeFailure(t *testing.T) {
	ctx, store, _ := testSetup(t, withUnsafeCorruptObjectDeletion())
	storagetesting.RunTestDeleteWithSuggestionAndMissingExpectedTransformOrDecodeError(ctx, t, store)
}

func TestPreconditionalDeleteWithSuggestion(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestPreconditionalDeleteWithSuggestion(ctx, t, store)
}

func TestPreconditionalDeleteWithSuggestionPass(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestPreconditionalDeleteWithOnlySuggestionPass(ctx, t, store)
}

func TestListPaging(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestListPaging(ctx, t, store)
}

func TestGetListNonRecursive(t *testing.T) {
	ctx, store, client := testSetup(t)
	storagetesting.RunTestGetListNonRecursive(ctx, t, etcdtest.IncreaseRV(client.Client), store)
}

func TestGetListRecursivePrefix(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestGetListRecursivePrefix(ctx, t, store)
}

func TestKeySchema(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestKeySchema(ctx, t, store)
}

func TestGetListWithErrorAggregation(t *testing.T) {
	ctx, store, _ := testSetup(t, withUnsafeCorruptObjectDeletion())
	corruptErr := &CorruptValueError{Err: errors.New("bits flipped")}
	storagetesting.RunTestGetListWithErrorAggregation(ctx, t, &storeWithTransformerOverride{Interface: store, store: store}, corruptErr)
}

func TestGetListWithoutErrorAggregation(t *testing.T) {
	ctx, store, _ := testSetup(t)
	corruptErr := &CorruptValueError{Err: errors.New("bits flipped")}
	storagetesting.RunTestGetListWithoutErrorAggregation(ctx, t, &storeWithTransformerOverride{Interface: store, store: store}, corruptErr)
}

func TestGuaranteedUpdate(t *testing.T) {
	ctx, store, client := testSetup(t)
	storagetesting.RunTestGuaranteedUpdate(ctx, t, &storeWithPrefixTransformer{store}, checkStorageInvariants(client.Client, store.codec))
}

func TestGuaranteedUpdateWithTTL(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateWithTTL(ctx, t, store)
}

func TestGuaranteedUpdateChecksStoredData(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateChecksStoredData(ctx, t, &storeWithPrefixTransformer{store})
}

func TestGuaranteedUpdateWithConflict(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateWithConflict(ctx, t, store)
}

func TestGuaranteedUpdateWithSuggestionAndConflict(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestGuaranteedUpdateWithSuggestionAndConflict(ctx, t, store)
}

func TestTransformationFailure(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestTransformationFailure(ctx, t, &storeWithPrefixTransformer{store})
}

func TestList(t *testing.T) {
	ctx, store, client := testSetup(t)
	storagetesting.RunTestList(ctx, t, store, compactStorage(store, client.Client), false, client.Kubernetes.(*storagetesting.KubernetesRecorder))
}

func TestConsistentList(t *testing.T) {
	ctx, store, client := testSetup(t)
	storagetesting.RunTestConsistentList(ctx, t, store, etcdtest.IncreaseRV(client.Client), false, true, false)
}

func TestCompactRevision(t *testing.T) {
	ctx, store, client := testSetup(t)
	storagetesting.RunTestCompactRevision(ctx, t, store, etcdtest.IncreaseRV(client.Client), compactStorage(store, client.Client))
}

// checkStorageCallsInvariants counts values read and etcd range calls: a
// paged list filtered by a selector must grow its page size.
func checkStorageCallsInvariants(transformer *storagetesting.PrefixTransformer, recorder *storagetesting.KVRecorder) storagetesting.CallsValidation {
	return func(t *testing.T, pageSize, estimatedProcessedObjects uint64) {
		if reads := transformer.GetReadsAndReset(); reads != estimatedProcessedObjects {
			t.Errorf("unexpected reads: %d, expected: %d", reads, estimatedProcessedObjects)
		}
		estimatedGetCalls := uint64(1)
		if pageSize != 0 {
			currLimit := pageSize
			for sum := uint64(1); sum < estimatedProcessedObjects; {
				currLimit = min(currLimit*2, maxPageSize)
				sum += currLimit
				estimatedGetCalls++
			}
		}
		if reads := recorder.GetReadsAndReset() + recorder.GetStreamReadsAndReset(); reads != estimatedGetCalls {
			t.Fatalf("unexpected reads: %d, want: %d", reads, estimatedGetCalls)
		}
	}
}

func TestListContinuation(t *testing.T) {
	ctx, store, client := testSetup(t)
	validation := checkStorageCallsInvariants(store.transformer.(*storagetesting.PrefixTransformer), client.KV.(*storagetesting.KVRecorder))
	storagetesting.RunTestListContinuation(ctx, t, store, validation)
}

func TestListPaginationRareObject(t *testing.T) {
	ctx, store, client := testSetup(t)
	validation := checkStorageCallsInvariants(store.transformer.(*storagetesting.PrefixTransformer), client.KV.(*storagetesting.KVRecorder))
	storagetesting.RunTestListPaginationRareObject(ctx, t, store, validation)
}

func TestListContinuationWithFilter(t *testing.T) {
	ctx, store, client := testSetup(t)
	validation := checkStorageCallsInvariants(store.transformer.(*storagetesting.PrefixTransformer), client.KV.(*storagetesting.KVRecorder))
	storagetesting.RunTestListContinuationWithFilter(ctx, t, store, validation)
}

func TestNamespaceScopedList(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestNamespaceScopedList(ctx, t, store)
}

func TestListInconsistentContinuation(t *testing.T) {
	ctx, store, client := testSetup(t)
	storagetesting.RunTestListInconsistentContinuation(ctx, t, store, compactStorage(store, client.Client))
}

func TestListResourceVersionMatch(t *testing.T) {
	ctx, store, _ := testSetup(t)
	storagetesting.RunTestListResourceVersionMatch(ctx, t, &storeWithPrefixTransformer{store})
}

func TestStats(t *testing.T) {
	for _, sizeEstimation := range []bool{true, false} {
		t.Run("sizeEstimation="+map[bool]string{true: "on", false: "off"}[sizeEstimation], func(t *testing.T) {
			ctx, store, _ := testSetup(t)
			if sizeEstimation {
				if err := store.EnableResourceSizeEstimation(store.Keys); err != nil {
					t.Fatal(err)
				}
			}
			storagetesting.RunTestStats(ctx, t, store, store.codec, store.transformer, sizeEstimation)
		})
	}
}
