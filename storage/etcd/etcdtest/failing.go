package etcdtest

import (
	"context"
	"errors"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
)

// FailingTransformer and FailingCodec fail reads on demand, as the
// testTransformer and testCodec of upstream's storage suites: the
// conformance tests of corrupt objects turn them on with SetFailing.
type FailingTransformer struct {
	value.Transformer
	fail atomic.Bool
}

// SetFailing makes every read from storage fail (true) or pass (false).
func (f *FailingTransformer) SetFailing(b bool) { f.fail.Store(b) }

// TransformFromStorage fails while failing is set.
func (f *FailingTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	if f.fail.Load() {
		return nil, false, errors.New("synthetic error")
	}
	return f.Transformer.TransformFromStorage(ctx, data, dataCtx)
}

// FailingCodec is FailingTransformer for decoding.
type FailingCodec struct {
	runtime.Codec
	fail atomic.Bool
}

// SetFailing makes every decode fail (true) or pass (false).
func (f *FailingCodec) SetFailing(b bool) { f.fail.Store(b) }

// Decode fails while failing is set.
func (f *FailingCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if f.fail.Load() {
		return nil, nil, errors.New("synthetic error")
	}
	return f.Codec.Decode(data, defaults, into)
}
