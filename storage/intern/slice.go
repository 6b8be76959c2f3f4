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
	for _, r := range t.recentSlices {
		if c, ok := r.([]T); ok && slices.Equal(c, s) {
			return c
		}
	}
	t.key = AppendField(t.key[:0], reflect.TypeFor[T]().String())
	for _, v := range s {
		t.key = appendKey(t.key, v)
	}
	c := s
	if known, ok := t.slices[string(t.key)]; ok {
		c = known.([]T)
	} else if t.admit(len(t.key)) {
		t.slices[string(t.key)] = s
	}
	t.recentSlices[t.nextSlice] = c
	t.nextSlice = (t.nextSlice + 1) % recent
	return c
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
	if c, ok := t.pointers[*p]; ok {
		return c.(*T)
	}
	if t.admit(int(unsafe.Sizeof(*p)) + 16) {
		t.pointers[*p] = p
	}
	return p
}
