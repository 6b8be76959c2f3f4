package job

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Resources whose writes a Job's sync waits to see in its caches.
const (
	resJobs = "jobs"
	resPods = "pods"
)

// writes remembers, per Job, the newest resourceVersion this controller
// wrote of each resource (the Job's status; its pods' creations and
// finalizer removals), so a sync waits until the caches have caught up
// with them (upstream's StaleControllerConsistency, Beta and on in 1.37):
// a Job whose cached status predates the completion this controller just
// wrote, or a pod list that predates a creation, would otherwise make it
// create an index or a pod again.
type writes struct {
	mu sync.Mutex
	rv map[types.UID]map[string]string
}

func newWrites() *writes { return &writes{rv: map[types.UID]map[string]string{}} }

// wroteAt records a write of resource at rv for the Job uid, if newer than
// the one recorded.
func (w *writes) wroteAt(uid types.UID, resource, rv string) {
	if rv == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.rv[uid]
	if m == nil {
		m = map[string]string{}
		w.rv[uid] = m
	}
	if old, ok := m[resource]; ok && !CaughtUp(rv, old) {
		return
	}
	m[resource] = rv
}

// ready returns nil once every cache, read by lastSync, is at least as new
// as the Job's recorded writes (and then forgets them), else an error
// naming the one behind.
func (w *writes) ready(uid types.UID, lastSync func(resource string) string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for resource, wrote := range w.rv[uid] {
		if read := lastSync(resource); !CaughtUp(read, wrote) {
			return fmt.Errorf("%s cache at resourceVersion %q, older than this controller's write at %q", resource, read, wrote)
		}
	}
	delete(w.rv, uid)
	return nil
}

func (w *writes) forget(uid types.UID) {
	w.mu.Lock()
	delete(w.rv, uid)
	w.mu.Unlock()
}

// CaughtUp says whether a cache that has read up to resourceVersion read
// shows a write made at wrote. resourceVersions are compared as decimal
// integers, as upstream; one that is not (or an empty read, from a cache
// that cannot tell) never blocks a sync.
func CaughtUp(read, wrote string) bool {
	if read == "" {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(read, wrote)
	return err != nil || c >= 0
}
