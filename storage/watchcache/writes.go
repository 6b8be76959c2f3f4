package watchcache

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
)

// Versioner implements storage.Interface.
func (c *Cache) Versioner() storage.Versioner { return c.versioner }

// Create implements storage.Interface: it goes through to the store; the
// cache learns of the object from the store's watch.
func (c *Cache) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return c.store.Create(ctx, key, obj, out, ttl)
}

// Delete implements storage.Interface: it goes through to the store, with
// the cache's copy of the object as the suggestion (it saves a read from
// etcd; the store retries when the suggestion is stale).
func (c *Cache) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, _ runtime.Object, opts storage.DeleteOptions) error {
	return c.store.Delete(ctx, key, out, preconditions, validateDeletion, c.suggestion(key), opts)
}

// GuaranteedUpdate implements storage.Interface: it goes through to the
// store, with the cache's copy of the object as the suggestion.
func (c *Cache) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, _ runtime.Object) error {
	return c.store.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, c.suggestion(key))
}

// suggestion is a copy of the cached object at key, or nil (untyped, so
// the store sees no suggestion) when the cache has none.
func (c *Cache) suggestion(key string) runtime.Object {
	if !c.Ready() {
		return nil
	}
	c.mu.RLock()
	e := c.st.tree.Get(key)
	c.mu.RUnlock()
	if e == nil {
		return nil
	}
	return e.obj.GetObject()
}

// Stats implements storage.Interface by asking the store.
func (c *Cache) Stats(ctx context.Context) (storage.Stats, error) { return c.store.Stats(ctx) }

// ReadinessCheck implements storage.Interface: ready once the first list
// is in.
func (c *Cache) ReadinessCheck() error {
	if !c.Ready() {
		return storage.ErrStorageNotReady
	}
	return nil
}

// RequestWatchProgress implements storage.Interface.
func (c *Cache) RequestWatchProgress(ctx context.Context) error {
	return c.store.RequestWatchProgress(ctx)
}

// GetCurrentResourceVersion implements storage.Interface: etcd's current
// revision.
func (c *Cache) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	return c.store.GetCurrentResourceVersion(ctx)
}

// EnableResourceSizeEstimation implements storage.Interface.
func (c *Cache) EnableResourceSizeEstimation(keys storage.KeysFunc) error {
	return c.store.EnableResourceSizeEstimation(keys)
}

// CompactRevision implements storage.Interface.
func (c *Cache) CompactRevision() int64 { return c.store.CompactRevision() }
