package intern

import (
	"reflect"
	"slices"
	"unsafe"
)

// Slice returns the canonical slice equal to s: as long, with elements
// equal by ==. appendKey appends an element's identity (every field that
// == compares, each length-prefixed with AppendField), from which the
// slice's key is built. Elements with pointers compare by address, so a
// slice whose elements hold pointers to values should not be interned by
// value this way.
//
// It is a function, not a method, because methods cannot have type
// parameters; canonical slices of different types never meet, as each
// key starts with the type's name.
func Slice[T comparable](t *Table, s []T, appendKey func(key []byte, v T) []byte) []T {
	if len(s) == 0 {
		return s
	}
	for i, r := range t.recentSlices {
		if c, ok := r.v.([]T); ok && slices.Equal(c, s) {
			if r.gen != t.gen {
				c = sliceByKey(t, c, appendKey)
				t.recentSlices[i] = recentValue[any]{c, t.gen}
			}
			return t.recentSlices[i].v.([]T)
		}
	}
	c := sliceByKey(t, s, appendKey)
	t.recentSlices[t.nextSlice] = recentValue[any]{c, t.gen}
	t.nextSlice = (t.nextSlice + 1) % recent
	return c
}

func sliceByKey[T comparable](t *Table, s []T, appendKey func(key []byte, v T) []byte) []T {
	t.key = AppendField(t.key[:0], reflect.TypeFor[T]().String())
	for _, v := range s {
		t.key = appendKey(t.key, v)
	}
	if known, ok := t.cur.slices[string(t.key)]; ok {
		return known.([]T)
	}
	if known, ok := t.old.slices[string(t.key)]; ok {
		k := string(t.key)
		t.promote(func() { delete(t.old.slices, k) }, len(k), func() { t.cur.slices[k] = known })
		return known.([]T)
	}
	if t.admit(len(t.key)) {
		t.cur.slices[string(t.key)] = s
	}
	return s
}

// AppendField appends s to a key with its length, so that no two
// different values make the same key.
func AppendField(key []byte, s string) []byte { return appendField(key, s) }

// Pointer returns the canonical pointer to a value equal to *p, for the
// optional scalar fields (a pod's terminationGracePeriodSeconds, priority,
// enableServiceLinks) that decoding allocates anew per object.
func Pointer[T comparable](t *Table, p *T) *T {
	if p == nil {
		return nil
	}
	n := int(unsafe.Sizeof(*p)) + 16
	if c, ok := t.cur.pointers[*p]; ok {
		return c.(*T)
	}
	if c, ok := t.old.pointers[*p]; ok {
		v := *p
		t.promote(func() { delete(t.old.pointers, v) }, n, func() { t.cur.pointers[v] = c })
		return c.(*T)
	}
	if t.admit(n) {
		t.cur.pointers[*p] = p
	}
	return p
}
