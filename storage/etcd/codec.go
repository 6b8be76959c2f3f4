package etcd

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/klog/v2"
)

// authenticatedData binds a transformed value to its etcd key, so that an
// encrypted value copied under another key does not decrypt. Bytes, not a
// string: list and watch pass the etcd key as it came, without a copy.
type authenticatedData []byte

func (d authenticatedData) AuthenticatedData() []byte { return d }

var _ value.Context = authenticatedData(nil)

// fromStorage undoes the transformer on a value read from key. A failure is
// an internal error naming the key, as upstream reports it.
func (s *Store) fromStorage(ctx context.Context, key string, v []byte) (data []byte, stale bool, err error) {
	if s.transformer == nil {
		return v, false, nil
	}
	data, stale, err = s.transformer.TransformFromStorage(ctx, v, authenticatedData(key))
	if err != nil {
		return nil, false, storage.NewInternalError(fmt.Errorf("unable to transform key %q: %w", key, err))
	}
	return data, stale, nil
}

// fromStorageKV is fromStorage for a value read with its key as bytes
// (lists and watches), which it does not copy.
func (s *Store) fromStorageKV(ctx context.Context, key, value []byte) ([]byte, error) {
	if s.transformer == nil {
		return value, nil
	}
	data, _, err := s.transformer.TransformFromStorage(ctx, value, authenticatedData(key))
	if err != nil {
		return nil, storage.NewInternalError(fmt.Errorf("unable to transform key %q: %w", key, err))
	}
	return data, nil
}

// toStorage applies the transformer to an encoded object for key.
func (s *Store) toStorage(ctx context.Context, key string, data []byte) ([]byte, error) {
	if s.transformer == nil {
		return data, nil
	}
	out, err := s.transformer.TransformToStorage(ctx, data, authenticatedData(key))
	if err != nil {
		return nil, storage.NewInternalError(fmt.Errorf("unable to transform key %q: %w", key, err))
	}
	return out, nil
}

// decodeInto decodes data read from key into out and sets its
// resourceVersion to rev. A value that does not decode is a CorruptObj
// error naming the key: a bad value in etcd must never panic the server.
func (s *Store) decodeInto(key string, data []byte, out runtime.Object, rev int64) error {
	if _, _, err := s.codec.Decode(data, nil, out); err != nil {
		return storage.NewCorruptObjError(key, fmt.Errorf("decode value at revision %d: %w", rev, err))
	}
	setRV(s.versioner, out, uint64(rev))
	return nil
}

// decodeNew decodes data read from key into a new object from newObj.
func (s *Store) decodeNew(key []byte, data []byte, newObj func() runtime.Object, rev int64) (runtime.Object, error) {
	var into runtime.Object
	if newObj != nil {
		into = newObj()
	}
	obj, _, err := s.codec.Decode(data, nil, into)
	if err != nil {
		return nil, storage.NewCorruptObjError(string(key), fmt.Errorf("decode value at revision %d: %w", rev, err))
	}
	setRV(s.versioner, obj, uint64(rev))
	return obj, nil
}

// setRV sets the resourceVersion of an object just decoded. Failing to set
// it does not make the object unusable, so it is only logged.
func setRV(v storage.Versioner, obj runtime.Object, rev uint64) {
	if err := v.UpdateObject(obj, rev); err != nil {
		klog.Errorf("etcd store: set resourceVersion %d on %T: %v", rev, obj, err)
	}
}
