package replicaset

import (
	"sync"
	"time"
)

// expectationsTTL: expectations older than this are forgotten, so a lost
// watch event delays a ReplicaSet by at most this long (upstream's 5 min).
const expectationsTTL = 5 * time.Minute

// expectations are upstream's UIDTrackingControllerExpectations: per
// ReplicaSet, how many creations it still expects to see and which pods
// it expects to see deleted. A ReplicaSet is not synced again until they
// are seen, so a slow watch never makes it create or delete twice.
type expectations struct {
	mu    sync.Mutex
	now   func() time.Time
	byKey map[string]*expected
}

type expected struct {
	adds int
	dels map[string]bool
	at   time.Time
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, byKey: map[string]*expected{}}
}

func (e *expectations) expect(key string, adds int, dels []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expected{adds: adds, dels: map[string]bool{}, at: e.now()}
	for _, d := range dels {
		x.dels[d] = true
	}
	e.byKey[key] = x
}

func (e *expectations) created(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.byKey[key]; x != nil {
		x.adds--
	}
}

func (e *expectations) deleted(key, pod string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.byKey[key]; x != nil {
		delete(x.dels, pod)
	}
}

func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.byKey[key]
	return x == nil || (x.adds <= 0 && len(x.dels) == 0) || e.now().Sub(x.at) > expectationsTTL
}

func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}
