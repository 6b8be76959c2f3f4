package flowcontrol

import (
	"net/url"
	"sync"

	"k8s.io/apimachinery/pkg/fields"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// watchKey is what a watch watches: a resource, in a namespace or all of
// them, one object by name or all (upstream's watchIdentifier).
type watchKey struct {
	group, resource, namespace, name string
}

// watchTracker counts the open watches by what they watch, so that the
// work estimator knows how many watchers a write notifies (upstream's
// watchTracker, registered by the filter for every watch, exempt ones
// included).
type watchTracker struct {
	mu     sync.Mutex
	counts map[watchKey]int
}

func newWatchTracker() *watchTracker { return &watchTracker{counts: map[watchKey]int{}} }

// indexedWatchFields are the fields a watch of the resource may select
// by that the watch cache indexes: such a watch hears of few writes and
// is not counted (upstream's builtinIndexes).
var indexedWatchFields = map[string]string{"pods": "spec.nodeName"}

// register counts a watch until the returned function is called.
func (t *watchTracker) register(info *genericapirequest.RequestInfo, query url.Values) (forget func()) {
	if field, ok := indexedWatchFields[info.Resource]; ok && info.APIGroup == "" {
		if v := exactField(query, field); v != "" {
			return func() {}
		}
	}
	k := watchKey{info.APIGroup, info.Resource, info.Namespace, info.Name}
	t.mu.Lock()
	t.counts[k]++
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.counts[k]--; t.counts[k] <= 0 {
			delete(t.counts, k)
		}
	}
}

// interested is how many watches a write of info reaches: those of its
// resource in every namespace, in its namespace, and of its object by name.
func (t *watchTracker) interested(info *genericapirequest.RequestInfo) int {
	k := watchKey{group: info.APIGroup, resource: info.Resource}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.counts[k]
	if info.Namespace != "" {
		k.namespace = info.Namespace
		n += t.counts[k]
	}
	if info.Name != "" {
		k.name = info.Name
		n += t.counts[k]
	}
	return n
}

// exactField is the value a fieldSelector of query requires field to
// have, or "" when it does not require one.
func exactField(query url.Values, field string) string {
	sel, err := fields.ParseSelector(query.Get("fieldSelector"))
	if err != nil {
		return ""
	}
	v, _ := sel.RequiresExactMatch(field)
	return v
}
