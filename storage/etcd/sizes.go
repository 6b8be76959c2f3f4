package etcd

import (
	"context"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"k8s.io/apiserver/pkg/storage"
)

// sizeEstimator remembers the size of the last value seen per key (from
// lists and watches), so that Stats can estimate the average object size
// without reading every value. Keys whose deletion was not seen are dropped
// when Stats learns the current key set.
type sizeEstimator struct {
	prefix  string // ends in "/"
	getKeys storage.KeysFunc

	// mu guards keys.
	mu   sync.Mutex
	keys map[string]sizeAt
}

type sizeAt struct {
	bytes int64
	rev   int64
}

func newSizeEstimator(prefix string, getKeys storage.KeysFunc) *sizeEstimator {
	return &sizeEstimator{prefix: prefix, getKeys: getKeys, keys: map[string]sizeAt{}}
}

// Stats counts the current keys and averages the sizes known for them.
func (e *sizeEstimator) Stats(ctx context.Context) (storage.Stats, error) {
	keys, err := e.getKeys(ctx)
	if err != nil {
		return storage.Stats{}, err
	}
	st := storage.Stats{ObjectCount: int64(len(keys))}
	e.mu.Lock()
	defer e.mu.Unlock()
	kept := make(map[string]sizeAt, len(keys))
	var total int64
	for _, k := range keys {
		// A watch cache gives keys without the path prefix.
		if !strings.HasPrefix(k, e.prefix) {
			k = e.prefix + strings.TrimPrefix(k, "/")
		}
		if sz, ok := e.keys[k]; ok {
			kept[k] = sz
			total += sz.bytes
		}
	}
	e.keys = kept
	if len(kept) > 0 {
		st.EstimatedAverageObjectSizeBytes = total / int64(len(kept))
	}
	return st, nil
}

// Update records the sizes of values read at their mod revisions.
func (e *sizeEstimator) Update(kvs []*mvccpb.KeyValue) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, kv := range kvs {
		e.updateLocked(kv)
	}
}

func (e *sizeEstimator) updateLocked(kv *mvccpb.KeyValue) {
	key := string(kv.Key)
	if e.keys[key].rev >= kv.ModRevision {
		return
	}
	e.keys[key] = sizeAt{bytes: int64(len(kv.Value)), rev: kv.ModRevision}
}

// Delete forgets a key deleted at kv.ModRevision.
func (e *sizeEstimator) Delete(kv *mvccpb.KeyValue) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.keys[string(kv.Key)].rev >= kv.ModRevision {
		return
	}
	delete(e.keys, string(kv.Key))
}

// Put records one value seen on a watch.
func (e *sizeEstimator) Put(kv *mvccpb.KeyValue) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updateLocked(kv)
}
