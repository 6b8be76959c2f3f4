package watchcache

import (
	"slices"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apiserver/pkg/storage"
)

// fieldSet is an element's selectable fields, kept compactly: a pod's ten
// fields as a fields.Set map take ~650 bytes, as a shared list of names
// and the object's own value strings ~130. Every object of a resource has
// the same field names, so the names are stored once per cache; the
// values of metadata.name and metadata.namespace are not stored at all
// when they are the object's own name and namespace (they always are for
// the registry's resources), but read from the object.
//
// It also holds the element's values for the cache's indexers: an indexed
// field is one of the fields (Options.Indexers agree with them), and the
// values of indexers that are not fields follow the fields' values,
// invisible to selectors.
//
// The values are a pointer to the first of names.width strings rather
// than a slice: the length is the layout's, and the 16 bytes saved per
// element keep it in a smaller size class.
type fieldSet struct {
	names  *fieldNames
	values *string
}

// Where a field's value is, besides a place in the stored values.
const (
	fromName      = -1 // the object's name
	fromNamespace = -2 // the object's namespace
)

// value returns the value at place at (a place in values, fromName or
// fromNamespace) for the element's object m.
func (f fieldSet) value(at int, m metav1.Object) string {
	switch at {
	case fromName:
		return m.GetName()
	case fromNamespace:
		return m.GetNamespace()
	}
	return unsafe.Slice(f.values, f.names.width)[at]
}

// fieldNames is one sorted list of field names, shared and never changed.
type fieldNames struct {
	sorted []string
	// at[i] is where the value of sorted[i] is: a place in a fieldSet's
	// values, fromName or fromNamespace.
	at []int
	// derived says which of metadata.name (bit 0) and metadata.namespace
	// (bit 1) are read from the object: part of the layout's identity.
	derived int
	// indexAt[i] is where the cache's i-th index value is: its field's
	// place, or past the stored fields for an indexer that is not one.
	indexAt []int
	// stored is the number of fields whose values are stored; width adds
	// the extra index values after them.
	stored, width int
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

// derivedFields says which of set's metadata fields are m's own name and
// namespace, as fieldNames.derived.
func derivedFields(set fields.Set, m metav1.Object) int {
	if m == nil {
		return 0
	}
	d := 0
	if v, ok := set["metadata.name"]; ok && v == m.GetName() {
		d |= 1
	}
	if v, ok := set["metadata.namespace"]; ok && v == m.GetNamespace() {
		d |= 2
	}
	return d
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

// compact returns set, the fields of object m, as a fieldSet. The values
// are set's strings, not copies; indexValue(i) is called for each indexer
// that is not a field.
func (l *fieldLayouts) compact(set fields.Set, m metav1.Object, indexValue func(i int) string) fieldSet {
	derived := derivedFields(set, m)
	names := l.last
	if names == nil || names.derived != derived || !names.matches(set) {
		names = l.lookup(set, derived)
	}
	if names.width == 0 {
		return fieldSet{names: names}
	}
	values := make([]string, names.width)
	for i, name := range names.sorted {
		if at := names.at[i]; at >= 0 {
			values[at] = set[name]
		}
	}
	for i, at := range names.indexAt {
		if at >= names.stored {
			values[at] = indexValue(i)
		}
	}
	return fieldSet{names: names, values: &values[0]}
}

func (l *fieldLayouts) lookup(set fields.Set, derived int) *fieldNames {
	for _, n := range l.all {
		if n.derived == derived && n.matches(set) {
			l.last = n
			return n
		}
	}
	sorted := make([]string, 0, len(set))
	for name := range set {
		sorted = append(sorted, name)
	}
	slices.Sort(sorted)
	n := &fieldNames{sorted: sorted, at: make([]int, len(sorted)), derived: derived, indexAt: make([]int, len(l.indexNames))}
	for i, name := range sorted {
		switch {
		case name == "metadata.name" && derived&1 != 0:
			n.at[i] = fromName
		case name == "metadata.namespace" && derived&2 != 0:
			n.at[i] = fromNamespace
		default:
			n.at[i] = n.width
			n.width++
		}
	}
	n.stored = n.width
	for i, name := range l.indexNames {
		if f, ok := slices.BinarySearch(sorted, name); ok {
			n.indexAt[i] = n.at[f]
		} else {
			n.indexAt[i] = n.width
			n.width++
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

// elementFields is an element seen as fields.Fields, for selectors.
type elementFields element

var _ fields.Fields = (*elementFields)(nil)

// Has implements fields.Fields.
func (e *elementFields) Has(name string) bool {
	_, ok := e.fields.names.index(name)
	return ok
}

// Get implements fields.Fields.
func (e *elementFields) Get(name string) string {
	if i, ok := e.fields.names.index(name); ok {
		return e.fields.value(e.fields.names.at[i], e.obj.orig)
	}
	return ""
}

// index returns the element's value for the cache's i-th indexer.
func (e *element) index(i int) string {
	return e.fields.value(e.fields.names.indexAt[i], e.obj.orig)
}

// matchAttributes is storage.SelectionPredicate.MatchesObjectAttributes
// over an element's labels and fields; p must be normalized (both
// selectors set).
func matchAttributes(p *storage.SelectionPredicate, e *element) bool {
	if p.Label.Empty() && p.Field.Empty() {
		return true
	}
	return p.Label.Matches(e.labels) && p.Field.Matches((*elementFields)(e))
}
