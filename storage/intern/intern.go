// Package intern keeps one copy of the parts that many decoded objects
// have in common: the managedFields of pods made from one template, their
// labels, their containers' resource lists. A cache of N such objects
// then holds those parts once instead of N times.
//
// An interned value is shared by every object that has it, so interning
// is only for objects nobody changes, such as the watch cache's. The
// canonical copy of a value is the first one the Table saw (no copy is
// made); the Table keeps it, and a key for it, for as long as the Table
// lives, up to a byte budget. Past the budget, values that are not yet
// known are handed back as they are.
package intern

import (
	"encoding/binary"
	"slices"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultBudget is a Table's budget when Options gives none: what the
// keys of values seen only once can cost at most.
const DefaultBudget = 4 << 20

// Table is a set of canonical values. It is not safe for concurrent use:
// its owner (the watch cache's ingest goroutine) is the one goroutine that
// interns, which spares a lock per value.
type Table struct {
	budget int
	used   int
	bytes  map[string][]byte
	str    map[string]string
	maps   map[string]map[string]string
	lists  map[string]corev1.ResourceList
	slices map[string]any // []T of Slice, keyed by T's name and elements
	// *T of Pointer, keyed by the T value itself (an interface key holds
	// its type, so equal values of different types stay apart)
	pointers map[any]any
	// scratch for building keys
	key   []byte
	names []string
	// The last canonical maps and lists handed out, checked before a key
	// is built: objects arrive in key order, and neighbours (the pods of
	// one ReplicaSet) mostly share them. This halves interning's cost.
	recentMaps   [recent]map[string]string
	recentLists  [recent]corev1.ResourceList
	recentSlices [recent]any
	nextMap      int
	nextList     int
	nextSlice    int
}

// recent is how many canonical maps and lists are remembered as recent.
const recent = 4

// Options configure a Table.
type Options struct {
	// Budget bounds the bytes of the keys the Table keeps; 0 means
	// DefaultBudget.
	Budget int
}

// New returns an empty Table.
func New(opts Options) *Table {
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	return &Table{
		budget:   opts.Budget,
		bytes:    map[string][]byte{},
		str:      map[string]string{},
		maps:     map[string]map[string]string{},
		lists:    map[string]corev1.ResourceList{},
		slices:   map[string]any{},
		pointers: map[any]any{},
	}
}

// admit reports whether a new key of n bytes fits the budget, and if so
// counts it.
func (t *Table) admit(n int) bool {
	if t.used+n > t.budget {
		return false
	}
	t.used += n
	return true
}

// Bytes returns the canonical slice equal to b. Its key is the slice
// itself (no copy), so b must never change once given.
func (t *Table) Bytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	if c, ok := t.bytes[string(b)]; ok {
		return c
	}
	if t.admit(len(b)) {
		t.bytes[unsafe.String(&b[0], len(b))] = b
	}
	return b
}

// String returns the canonical string equal to s.
func (t *Table) String(s string) string {
	if s == "" {
		return s
	}
	if c, ok := t.str[s]; ok {
		return c
	}
	if t.admit(len(s)) {
		t.str[s] = s
	}
	return s
}

// Map returns the canonical map equal to m (same keys, same values).
func (t *Table) Map(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	for _, r := range t.recentMaps {
		if sameMap(r, m) {
			return r
		}
	}
	c := t.mapByKey(m)
	t.recentMaps[t.nextMap] = c
	t.nextMap = (t.nextMap + 1) % recent
	return c
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) || a == nil {
		return false
	}
	for k, v := range b {
		if av, ok := a[k]; !ok || av != v {
			return false
		}
	}
	return true
}

func (t *Table) mapByKey(m map[string]string) map[string]string {
	t.key = t.key[:0]
	for _, k := range t.sortedKeys(m) {
		t.key = appendField(appendField(t.key, k), m[k])
	}
	if c, ok := t.maps[string(t.key)]; ok {
		return c
	}
	if t.admit(len(t.key)) {
		t.maps[string(t.key)] = m
	}
	return m
}

// ResourceList returns the canonical list equal to l: the same resource
// names with quantities that print the same, so that every encoding of
// the object is unchanged.
func (t *Table) ResourceList(l corev1.ResourceList) corev1.ResourceList {
	if len(l) == 0 {
		return l
	}
	for _, r := range t.recentLists {
		if sameList(r, l) {
			return r
		}
	}
	c := t.listByKey(l)
	t.recentLists[t.nextList] = c
	t.nextList = (t.nextList + 1) % recent
	return c
}

// sameList reports whether a and b have the same names with quantities
// that print the same (the key listByKey would build): a quantity prints
// in the canonical form of its value in its format, so equal values in
// equal formats print alike; comparing them so spares the printing, which
// for most quantities is not cached.
func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) || a == nil {
		return false
	}
	for name, q := range b {
		aq, ok := a[name]
		if !ok || aq.Format != q.Format || aq.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

func (t *Table) listByKey(l corev1.ResourceList) corev1.ResourceList {
	t.names = t.names[:0]
	for name := range l {
		t.names = append(t.names, string(name))
	}
	slices.Sort(t.names)
	t.key = t.key[:0]
	for _, name := range t.names {
		q := l[corev1.ResourceName(name)]
		t.key = appendField(appendField(t.key, name), q.String())
	}
	if c, ok := t.lists[string(t.key)]; ok {
		return c
	}
	if t.admit(len(t.key)) {
		t.lists[string(t.key)] = l
	}
	return l
}

// Meta interns, in place, what objects of one kind tend to share: their
// labels and annotations and their managedFields' managers, versions and
// field sets.
func (t *Table) Meta(m metav1.Object) {
	if l := m.GetLabels(); len(l) > 0 {
		m.SetLabels(t.Map(l))
	}
	if a := m.GetAnnotations(); len(a) > 0 {
		m.SetAnnotations(t.Map(a))
	}
	// GetManagedFields returns the object's own slice.
	t.ManagedFields(m.GetManagedFields())
}

// ManagedFields interns, in place, the parts of each entry that entries
// written by the same manager share.
func (t *Table) ManagedFields(entries []metav1.ManagedFieldsEntry) {
	for i := range entries {
		e := &entries[i]
		e.Manager = t.String(e.Manager)
		e.APIVersion = t.String(e.APIVersion)
		e.FieldsType = t.String(e.FieldsType)
		e.Subresource = t.String(e.Subresource)
		if e.FieldsV1 != nil {
			e.FieldsV1.Raw = t.Bytes(e.FieldsV1.Raw)
		}
	}
}

// sortedKeys returns m's keys, sorted, in the Table's scratch slice.
func (t *Table) sortedKeys(m map[string]string) []string {
	t.names = t.names[:0]
	for k := range m {
		t.names = append(t.names, k)
	}
	slices.Sort(t.names)
	return t.names
}

// appendField appends s with its length, so that no two different maps
// make the same key.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
