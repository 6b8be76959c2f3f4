package api_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// TestCRDSchemaChangeKeepsCustomResourcesServed reads a custom resource
// without pause while its CRD's schema changes: every read answers (the
// CRD's new serving takes over from the old one in one step, as
// upstream's handler swap), and the new schema's default shows on read.
// The conformance test "custom resource defaulting for requests and from
// storage works" failed on the 404 a read met in between.
func TestCRDSchemaChangeKeepsCustomResourcesServed(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "schemachange.example.com"
	name := "crontabs." + group
	if _, err := createCRD(t, ctx, crontabs(group)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteCRD(t, context.Background(), name) })
	waitCRD(t, ctx, name, established)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}
	crs := dynamic.NewForConfigOrDie(config(t)).Resource(gvr).Namespace("default")
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := crs.Create(ctx, crontab(group, "read-me", nil), metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	}); err != nil {
		t.Fatal("custom resource never created")
	}

	var reads, failures atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := crs.Get(ctx, "read-me", metav1.GetOptions{}); err != nil && ctx.Err() == nil {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
				}
				reads.Add(1)
			}
		})
	}
	const changes = 10
	for i := range changes {
		// Each change moves the default of spec.image: a new schema, so
		// the CRD is served anew every time.
		patch := fmt.Sprintf(`[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/note","value":{"type":"string","default":"v%d"}}]`, i)
		if err := crdClient(t).Patch(types.JSONPatchType).Resource("customresourcedefinitions").Name(name).Body([]byte(patch)).Do(ctx).Error(); err != nil {
			t.Fatalf("change %d of the CRD: %v", i, err)
		}
		want := fmt.Sprintf("v%d", i)
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			u, err := crs.Get(ctx, "read-me", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			note, _, _ := unstructured.NestedString(u.Object, "spec", "note")
			return note == want, nil
		}); err != nil {
			t.Fatalf("change %d: the default spec.note=%q never showed on read", i, want)
		}
	}
	close(stop)
	readers.Wait()
	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d reads failed while the CRD's schema changed %d times; first: %v", n, reads.Load(), changes, firstFailure.Load())
	}
}
