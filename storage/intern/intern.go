// Package intern keeps one copy of the parts that many decoded objects
// have in common: the managedFields of pods made from one template, their
// labels, their containers' resource lists. A cache of N such objects
// then holds those parts once instead of N times.
//
// An interned value is shared by every object that has it, so interning
// is only for objects nobody changes, such as the watch cache's. The
// canonical copy of a value is the first one the Table saw (no copy is
// made); the Table keeps it, and a key for it, while objects that have it
// keep arriving, within a byte budget.
//
// Values age out in two generations, each of at most half the budget:
// when the current one is full, the previous one is dropped and the
// current one becomes the previous. A value found in the previous
// generation moves to the current one. So a value no object taken in has
// had for a whole generation is forgotten: the values of deleted objects
// stop holding the budget (and their memory), and after any amount of
// churn new values are shared as the first ones were. A value forgotten
// while old objects still hold it only means that the next object with it
// starts a new canonical copy.
package intern

import (
	"encoding/binary"
	"slices"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultBudget is a Table's budget when Options gives none: what the
// keys of both generations can cost at most. The values they keep alive
// for no live object (those of deleted objects, until they age out) are
// bounded by it too: about twice as many bytes.
const DefaultBudget = 4 << 20

// Table is a set of canonical values. It is not safe for concurrent use:
// its owner (the watch cache's ingest goroutine) is the one goroutine that
// interns, which spares a lock per value.
type Table struct {
	budget int
	// cur is the generation values are added to and moved to when found;
	// old is the previous one, dropped when cur is full. gen counts the
	// generations begun, so that a recent value knows which one it is in.
	cur, old *generation
	gen      uint64
	// scratch for building keys
	key   []byte
	names []string
	// The last canonical maps and lists handed out, checked before a key
	// is built: objects arrive in key order, and neighbours (the pods of
	// one ReplicaSet) mostly share them. This halves interning's cost.
	recentMaps   [recent]recentValue[map[string]string]
	recentLists  [recent]recentValue[corev1.ResourceList]
	recentSlices [recent]recentValue[any]
	nextMap      int
	nextList     int
	nextSlice    int
}

// generation is one generation's canonical values, by key.
type generation struct {
	used   int // bytes of keys
	bytes  map[string][]byte
	str    map[string]string
	maps   map[string]map[string]string
	lists  map[string]corev1.ResourceList
	slices map[string]any // []T of Slice, keyed by T's name and elements
	// *T of Pointer, keyed by the T value itself (an interface key holds
	// its type, so equal values of different types stay apart)
	pointers map[any]any
}

func newGeneration() *generation {
	return &generation{
		bytes:    map[string][]byte{},
		str:      map[string]string{},
		maps:     map[string]map[string]string{},
		lists:    map[string]corev1.ResourceList{},
		slices:   map[string]any{},
		pointers: map[any]any{},
	}
}

// recentValue is a canonical value handed out lately, with the
// generation it was in then. A recent value found again is used at once
// if that generation is still the current one; otherwise it is looked up
// by key, which moves it to the current generation (or adds it again), so
// that a value that only ever hits the recent ones does not age out.
type recentValue[V any] struct {
	v   V
	gen uint64
}

// recent is how many canonical maps and lists are remembered as recent.
const recent = 4

// Options configure a Table.
type Options struct {
	// Budget bounds the bytes of the keys the Table keeps, over both
	// generations; 0 means DefaultBudget.
	Budget int
}

// New returns an empty Table.
func New(opts Options) *Table {
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	return &Table{budget: opts.Budget, cur: newGeneration(), old: newGeneration(), gen: 1}
}

// admit reports whether a new key of n bytes may be added to the current
// generation, and if so counts it; a full generation makes way by
// dropping the previous one.
func (t *Table) admit(n int) bool {
	limit := t.budget / 2
	if n > limit {
		return false
	}
	if t.cur.used+n > limit {
		t.old, t.cur = t.cur, newGeneration()
		t.gen++
	}
	t.cur.used += n
	return true
}

// promote moves a value found in the previous generation, under key of n
// bytes, to the current one; set adds it there.
func (t *Table) promote(drop func(), n int, set func()) {
	drop()
	t.old.used -= n
	if t.admit(n) {
		set()
	}
}

// Held is the number of bytes of keys the Table holds, over both
// generations.
func (t *Table) Held() int { return t.cur.used + t.old.used }

// Bytes returns the canonical slice equal to b. Its key is the slice
// itself (no copy), so b must never change once given.
func (t *Table) Bytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	if c, ok := t.cur.bytes[string(b)]; ok {
		return c
	}
	if c, ok := t.old.bytes[string(b)]; ok {
		k := unsafe.String(&c[0], len(c))
		t.promote(func() { delete(t.old.bytes, k) }, len(k), func() { t.cur.bytes[k] = c })
		return c
	}
	if t.admit(len(b)) {
		t.cur.bytes[unsafe.String(&b[0], len(b))] = b
	}
	return b
}

// String returns the canonical string equal to s.
func (t *Table) String(s string) string {
	if s == "" {
		return s
	}
	if c, ok := t.cur.str[s]; ok {
		return c
	}
	if c, ok := t.old.str[s]; ok {
		t.promote(func() { delete(t.old.str, c) }, len(c), func() { t.cur.str[c] = c })
		return c
	}
	if t.admit(len(s)) {
		t.cur.str[s] = s
	}
	return s
}

// Map returns the canonical map equal to m (same keys, same values).
func (t *Table) Map(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	for i, r := range t.recentMaps {
		if sameMap(r.v, m) {
			if r.gen != t.gen {
				c := t.mapByKey(r.v)
				t.recentMaps[i] = recentValue[map[string]string]{c, t.gen}
			}
			return t.recentMaps[i].v
		}
	}
	c := t.mapByKey(m)
	t.recentMaps[t.nextMap] = recentValue[map[string]string]{c, t.gen}
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
	if c, ok := t.cur.maps[string(t.key)]; ok {
		return c
	}
	if c, ok := t.old.maps[string(t.key)]; ok {
		k := string(t.key)
		t.promote(func() { delete(t.old.maps, k) }, len(k), func() { t.cur.maps[k] = c })
		return c
	}
	if t.admit(len(t.key)) {
		t.cur.maps[string(t.key)] = m
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
	for i, r := range t.recentLists {
		if sameList(r.v, l) {
			if r.gen != t.gen {
				c := t.listByKey(r.v)
				t.recentLists[i] = recentValue[corev1.ResourceList]{c, t.gen}
			}
			return t.recentLists[i].v
		}
	}
	c := t.listByKey(l)
	t.recentLists[t.nextList] = recentValue[corev1.ResourceList]{c, t.gen}
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
	if c, ok := t.cur.lists[string(t.key)]; ok {
		return c
	}
	if c, ok := t.old.lists[string(t.key)]; ok {
		k := string(t.key)
		t.promote(func() { delete(t.old.lists, k) }, len(k), func() { t.cur.lists[k] = c })
		return c
	}
	if t.admit(len(t.key)) {
		t.cur.lists[string(t.key)] = l
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
