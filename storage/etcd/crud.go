package etcd

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// Get implements storage.Interface. The read is linearizable; a requested
// resourceVersion newer than etcd's revision is TooLargeResourceVersion.
func (s *Store) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	key, err := s.prepareKey(key, false)
	if err != nil {
		return err
	}
	resp, err := s.client.Kubernetes.Get(ctx, key, kubernetes.GetOptions{})
	if err != nil {
		return fmt.Errorf("get %q: %w", key, err)
	}
	if err := s.validateMinimumResourceVersion(opts.ResourceVersion, uint64(resp.Revision)); err != nil {
		return err
	}
	if resp.KV == nil {
		if opts.IgnoreNotFound {
			return runtime.SetZeroValue(out)
		}
		return storage.NewKeyNotFoundError(key, 0)
	}
	data, _, err := s.fromStorage(ctx, key, resp.KV.Value)
	if err != nil {
		if c := corruptObjError(key, err); c != nil && s.unsafeCorrupt {
			return c
		}
		return err
	}
	return s.decodeInto(key, data, out, resp.KV.ModRevision)
}

// Create implements storage.Interface: a put guarded by "the key has never
// been written since its last deletion" (mod revision 0).
func (s *Store) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	key, err := s.prepareKey(key, false)
	if err != nil {
		return err
	}
	if rv, err := s.versioner.ObjectResourceVersion(obj); err == nil && rv != 0 {
		return storage.ErrResourceVersionSetOnCreate
	}
	if err := s.versioner.PrepareObjectForStorage(obj); err != nil {
		return fmt.Errorf("PrepareObjectForStorage failed: %w", err)
	}
	data, err := runtime.Encode(s.codec, obj)
	if err != nil {
		return fmt.Errorf("encode %T for %q: %w", obj, key, err)
	}
	var lease clientv3.LeaseID
	if ttl != 0 {
		if lease, err = s.leases.Get(ctx, int64(ttl)); err != nil {
			return err
		}
	}
	stored, err := s.toStorage(ctx, key, data)
	if err != nil {
		return err
	}
	resp, err := s.client.Kubernetes.OptimisticPut(ctx, key, stored, 0, kubernetes.PutOptions{LeaseID: lease})
	if err != nil {
		return fmt.Errorf("create %q: %w", key, err)
	}
	if !resp.Succeeded {
		return storage.NewKeyExistsError(key, 0)
	}
	if out != nil {
		return s.decodeInto(key, data, out, resp.Revision)
	}
	return nil
}
