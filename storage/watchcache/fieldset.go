package watchcache

import (
	"slices"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/storage"
)

// fieldSet is an element's selectable fields, kept compactly: a pod's ten
// fields as a fields.Set map take ~650 bytes, as a shared list of names
// and the object's own value strings ~170. Every object of a resource has
// the same field names, so the names are stored once per cache.
//
// It also holds the element's values for the cache's indexers: an indexed
// field is one of the fields (Options.Indexers agree with them), and the
// values of indexers that are not fields follow the fields' values,
// invisible to Get and Has.
type fieldSet struct {
	names  *fieldNames
	values []string // values[i] is the value of names.sorted[i], then extra index values
}

// index returns the value of the cache's i-th indexer.
func (f fieldSet) index(i int) string { return f.values[f.names.indexAt[i]] }

var _ fields.Fields = fieldSet{}

// Has implements fields.Fields.
func (f fieldSet) Has(name string) bool {
	_, ok := f.names.index(name)
	return ok
}

// Get implements fields.Fields.
func (f fieldSet) Get(name string) string {
	if i, ok := f.names.index(name); ok {
		return f.values[i]
	}
	return ""
}

// fieldNames is one sorted list of field names, shared and never changed.
type fieldNames struct {
	sorted []string
	// indexAt[i] is where a fieldSet's values hold the cache's i-th
	// index value: its field's place, or past the fields for an indexer
	// that is not one of them.
	indexAt []int
}

func (n *fieldNames) index(name string) (int, bool) {
	if n == nil {
		return 0, false
	}
	// Resources have about ten selectable fields: a linear scan beats a
	// binary search's unpredictable branches at that size.
	for i, s := range n.sorted {
		if s == name {
			return i, true
		}
	}
	return 0, false
}

// matches reports whether set has exactly these names.
func (n *fieldNames) matches(set fields.Set) bool {
	if len(set) != len(n.sorted) {
		return false
	}
	for _, name := range n.sorted {
		if _, ok := set[name]; !ok {
			return false
		}
	}
	return true
}

// maxLayouts bounds how many distinct name lists a cache shares.
const maxLayouts = 64

// fieldLayouts turns fields.Sets into fieldSets, sharing name lists. It
// is not safe for concurrent use; the cache's ingest goroutine owns it.
type fieldLayouts struct {
	indexNames []string // the cache's indexers, in order
	// last is the most recently used list: with one resource's objects
	// it is nearly always the one wanted.
	last *fieldNames
	all  []*fieldNames // every list shared so far
}

// compact returns set as a fieldSet. The values are set's strings, not
// copies; indexValue(i) is called for each indexer that is not a field.
func (l *fieldLayouts) compact(set fields.Set, indexValue func(i int) string) fieldSet {
	names := l.last
	if names == nil || !names.matches(set) {
		names = l.lookup(set)
	}
	values := make([]string, len(names.sorted), len(names.sorted)+len(names.indexAt))
	for i, name := range names.sorted {
		values[i] = set[name]
	}
	for i, at := range names.indexAt {
		if at >= len(names.sorted) {
			values = append(values, indexValue(i))
		}
	}
	return fieldSet{names: names, values: slices.Clip(values)}
}

func (l *fieldLayouts) lookup(set fields.Set) *fieldNames {
	for _, n := range l.all {
		if n.matches(set) {
			l.last = n
			return n
		}
	}
	sorted := make([]string, 0, len(set))
	for name := range set {
		sorted = append(sorted, name)
	}
	slices.Sort(sorted)
	n := &fieldNames{sorted: sorted, indexAt: make([]int, len(l.indexNames))}
	extra := len(sorted)
	for i, name := range l.indexNames {
		if at, ok := slices.BinarySearch(sorted, name); ok {
			n.indexAt[i] = at
		} else {
			n.indexAt[i] = extra
			extra++
		}
	}
	// An attribute function whose names vary per object would grow the
	// list without end: past maxLayouts, lists are no longer shared.
	if len(l.all) < maxLayouts {
		l.all = append(l.all, n)
		l.last = n
	}
	return n
}

// matchAttributes is storage.SelectionPredicate.MatchesObjectAttributes
// over a fieldSet; p must be normalized (both selectors set).
func matchAttributes(p *storage.SelectionPredicate, l labels.Set, f fieldSet) bool {
	if p.Label.Empty() && p.Field.Empty() {
		return true
	}
	return p.Label.Matches(l) && p.Field.Matches(f)
}
