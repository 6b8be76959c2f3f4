package etcd

import (
	"bytes"
	"context"
	"fmt"
	"reflect"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
)

// objState is the object at a key as an update or delete sees it: decoded,
// its mod revision and its encoded (untransformed) bytes.
type objState struct {
	obj   runtime.Object
	meta  storage.ResponseMeta
	rev   int64
	data  []byte
	stale bool // the transformer asks for the value to be rewritten
}

// GuaranteedUpdate implements storage.Interface: read (or take the cached
// object), check preconditions, apply tryUpdate, and compare-and-swap on
// the mod revision; on conflict start again from the value the failed
// transaction returned. Nothing is written when the new encoding equals
// the stored one.
func (s *Store) GuaranteedUpdate(
	ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExisting runtime.Object) error {
	key, err := s.prepareKey(key, false)
	if err != nil {
		return err
	}
	v, err := conversion.EnforcePtr(dest)
	if err != nil {
		return fmt.Errorf("unable to convert output object to pointer: %w", err)
	}
	current := func() (*objState, error) { return s.currentState(ctx, key, v, ignoreNotFound, false) }

	var orig *objState
	var origIsCurrent bool
	if cachedExisting != nil {
		orig, err = s.stateFromObject(cachedExisting)
	} else {
		orig, err = current()
		origIsCurrent = true
	}
	if err != nil {
		return err
	}

	for {
		if err := preconditions.Check(key, orig.obj); err != nil {
			if origIsCurrent {
				return err
			}
			// The cached object may be stale: decide on the real one.
			if orig, err = current(); err != nil {
				return err
			}
			origIsCurrent = true
			continue
		}

		ret, ttl, err := s.applyUpdate(orig, tryUpdate)
		if err != nil {
			if origIsCurrent {
				return err
			}
			cachedRev, cachedErr := orig.rev, err
			if orig, err = current(); err != nil {
				return err
			}
			origIsCurrent = true
			if cachedRev == orig.rev {
				// The cache was right, so is the error.
				return cachedErr
			}
			continue
		}

		data, err := runtime.Encode(s.codec, ret)
		if err != nil {
			return fmt.Errorf("encode %T for %q: %w", ret, key, err)
		}
		if !orig.stale && bytes.Equal(data, orig.data) {
			// Same bytes as stored: no write, no event. With a cached
			// object, confirm against etcd before skipping the write.
			if !origIsCurrent {
				if orig, err = current(); err != nil {
					return err
				}
				origIsCurrent = true
				if !bytes.Equal(data, orig.data) {
					continue
				}
			}
			if !orig.stale {
				return s.decodeInto(key, orig.data, dest, orig.rev)
			}
		}

		stored, err := s.toStorage(ctx, key, data)
		if err != nil {
			return err
		}
		putOpts := kubernetes.PutOptions{GetOnFailure: true}
		if ttl != 0 {
			if putOpts.LeaseID, err = s.leases.Get(ctx, int64(ttl)); err != nil {
				return err
			}
		}
		resp, err := s.client.Kubernetes.OptimisticPut(ctx, key, stored, orig.rev, putOpts)
		if err != nil {
			return fmt.Errorf("update %q at revision %d: %w", key, orig.rev, err)
		}
		if !resp.Succeeded {
			klog.V(4).Infof("etcd store: update of %s conflicted, retrying", key)
			if orig, err = s.state(ctx, resp.KV, key, v, ignoreNotFound, false); err != nil {
				return err
			}
			origIsCurrent = true
			continue
		}
		return s.decodeInto(key, data, dest, resp.Revision)
	}
}

// Delete implements storage.Interface: delete guarded by the mod revision
// of the object that passed preconditions and validateDeletion; on
// conflict, decide again on the value the failed transaction returned.
// With opts.ExpectTransformOrDecodeError the object is deleted without
// decoding, and only if it indeed does not decode (unsafe deletion of
// corrupt objects).
func (s *Store) Delete(
	ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExisting runtime.Object, opts storage.DeleteOptions) error {
	key, err := s.prepareKey(key, false)
	if err != nil {
		return err
	}
	v, err := conversion.EnforcePtr(out)
	if err != nil {
		return fmt.Errorf("unable to convert output object to pointer: %w", err)
	}
	expectCorrupt := opts.ExpectTransformOrDecodeError && s.unsafeCorrupt
	current := func() (*objState, error) { return s.currentState(ctx, key, v, false, expectCorrupt) }

	var orig *objState
	var origIsCurrent bool
	if cachedExisting != nil && !expectCorrupt {
		orig, err = s.stateFromObject(cachedExisting)
	} else {
		orig, err = current()
		origIsCurrent = true
	}
	if err != nil {
		return err
	}

	for {
		checkErr := preconditions.Check(key, orig.obj)
		if checkErr == nil {
			checkErr = validateDeletion(ctx, orig.obj)
		}
		if checkErr != nil {
			if origIsCurrent {
				return checkErr
			}
			cachedRev := orig.rev
			if orig, err = current(); err != nil {
				return err
			}
			origIsCurrent = true
			if cachedRev == orig.rev {
				return checkErr
			}
			continue
		}

		resp, err := s.client.Kubernetes.OptimisticDelete(ctx, key, orig.rev, kubernetes.DeleteOptions{GetOnFailure: true})
		if err != nil {
			return fmt.Errorf("delete %q at revision %d: %w", key, orig.rev, err)
		}
		if !resp.Succeeded {
			klog.V(4).Infof("etcd store: deletion of %s conflicted, retrying", key)
			if orig, err = s.state(ctx, resp.KV, key, v, false, expectCorrupt); err != nil {
				return err
			}
			origIsCurrent = true
			continue
		}
		if expectCorrupt {
			return nil
		}
		return s.decodeInto(key, orig.data, out, resp.Revision)
	}
}

// currentState reads key from etcd (linearizably) into an objState.
func (s *Store) currentState(ctx context.Context, key string, v reflect.Value, ignoreNotFound, expectCorrupt bool) (*objState, error) {
	resp, err := s.client.Kubernetes.Get(ctx, key, kubernetes.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, err)
	}
	return s.state(ctx, resp.KV, key, v, ignoreNotFound, expectCorrupt)
}

// state decodes kv (nil: the key does not exist) into a new object of v's
// type. With expectCorrupt a value that transforms and decodes is an
// InvalidObj error, and one that does not yields a state without object.
func (s *Store) state(ctx context.Context, kv *mvccpb.KeyValue, key string, v reflect.Value, ignoreNotFound, expectCorrupt bool) (*objState, error) {
	st := &objState{}
	if u, ok := v.Addr().Interface().(runtime.Unstructured); ok {
		st.obj = u.NewEmptyInstance()
	} else {
		st.obj = reflect.New(v.Type()).Interface().(runtime.Object)
	}
	if kv == nil {
		if !ignoreNotFound {
			return nil, storage.NewKeyNotFoundError(key, 0)
		}
		if err := runtime.SetZeroValue(st.obj); err != nil {
			return nil, err
		}
		return st, nil
	}
	st.rev = kv.ModRevision
	st.meta.ResourceVersion = uint64(kv.ModRevision)

	data, stale, err := s.fromStorage(ctx, key, kv.Value)
	if err != nil {
		if !expectCorrupt {
			return nil, err
		}
		st.obj, st.stale = nil, true
		return st, nil
	}
	st.data, st.stale = data, stale
	if err := s.decodeInto(key, data, st.obj, st.rev); err != nil {
		if !expectCorrupt {
			return nil, err
		}
		st.obj = nil
		return st, nil
	}
	if expectCorrupt {
		return nil, storage.NewInvalidObjError(key, "unsafe deletion is not allowed because the object is decodable from storage")
	}
	return st, nil
}

// stateFromObject makes an objState from a caller's cached copy: its
// resourceVersion is the guess of the mod revision, its encoding without
// resourceVersion the guess of the stored bytes.
func (s *Store) stateFromObject(obj runtime.Object) (*objState, error) {
	rv, err := s.versioner.ObjectResourceVersion(obj)
	if err != nil {
		return nil, fmt.Errorf("couldn't get resource version: %w", err)
	}
	st := &objState{obj: obj, rev: int64(rv)}
	st.meta.ResourceVersion = rv
	// resourceVersion is not stored: clear it to encode, then put it back.
	if err := s.versioner.PrepareObjectForStorage(obj); err != nil {
		return nil, fmt.Errorf("PrepareObjectForStorage failed: %w", err)
	}
	if st.data, err = runtime.Encode(s.codec, obj); err != nil {
		return nil, err
	}
	setRV(s.versioner, st.obj, rv)
	return st, nil
}

// applyUpdate calls the caller's update function and prepares its result
// for storage (no resourceVersion, no selfLink).
func (s *Store) applyUpdate(st *objState, tryUpdate storage.UpdateFunc) (runtime.Object, uint64, error) {
	ret, ttl, err := tryUpdate(st.obj, st.meta)
	if err != nil {
		return nil, 0, err
	}
	if err := s.versioner.PrepareObjectForStorage(ret); err != nil {
		return nil, 0, fmt.Errorf("PrepareObjectForStorage failed: %w", err)
	}
	if ttl == nil {
		return ret, 0, nil
	}
	return ret, *ttl, nil
}
