package policy

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The per-request size bound.
//
// The untracked evaluation needs a bound on every size an expression can
// read from object and oldObject: the length of a string (in code
// points), of a list and of a map, in CEL's view of the typed object
// (upstream's schemaless reflection, which shows each value as its JSON
// form: []byte as base64, times, durations and quantities as strings).
// The length of the object's JSON form is such a bound, but encoding the
// object costs more than the tracking it spares when the server's caches
// are cold (a quarter of the evaluation in the request benchmark's
// profile). The protobuf size the generated code computes without
// reflection is one too, for the types whose every JSON field is also a
// protobuf field:
//
//   - a string's bytes are written as they are (code points ≤ bytes);
//   - a list's elements and a map's entries take at least a byte each;
//   - []byte is written raw and read as base64: 4/3 of it, plus padding;
//   - a time, micro time or duration is a fixed-format string of at most
//     35 characters however small its protobuf form;
//   - a quantity is written as its canonical string, which is its JSON;
//   - an int-or-string holds its string in the protobuf form;
//   - managed fields (FieldsV1) are raw JSON, longer than what they hold;
//   - apiVersion and kind (TypeMeta) are not in the protobuf form: their
//     own lengths are added to the bound's maximum.
//
// So every size is at most 2×Size()+64, or the length of apiVersion or
// kind. Types with any other JSON field (no protobuf tag, a custom JSON
// form, an interface, a RawExtension, whose JSON may come from an
// in-memory object rather than the bytes the protobuf size counts) are
// bounded by their JSON length as before; protoCovers decides, once per
// type.

// sizeBoundOf bounds every size CEL can read in obj (0 for none, -1 for
// no bound).
func sizeBoundOf(obj runtime.Object) int64 {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return 0
	}
	s, ok := obj.(interface{ Size() int })
	if !ok {
		return jsonLength(obj)
	}
	return sizedBound(obj, s.Size())
}

// sizedBound is sizeBoundOf for a typed object whose protobuf size the
// caller has (usable has read it already).
func sizedBound(obj runtime.Object, size int) int64 {
	if !protoCovers(reflect.TypeOf(obj)) {
		return jsonLength(obj)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	return max(2*int64(size)+64, int64(len(gvk.Group)+1+len(gvk.Version)), int64(len(gvk.Kind)))
}

// jsonLength is the length of obj's JSON form (0 for none, -1 when it
// cannot be encoded).
func jsonLength(obj runtime.Object) int64 {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return 0
	}
	var c byteCounter
	if err := json.NewEncoder(&c).Encode(obj); err != nil || c > math.MaxInt64/2 {
		return -1
	}
	return int64(c)
}

type byteCounter int64

func (c *byteCounter) Write(p []byte) (int, error) {
	*c += byteCounter(len(p))
	return len(p), nil
}

// covered caches protoCovers per type.
var covered sync.Map // reflect.Type → bool

// protoCovers says whether 2×Size()+64 bounds the CEL-visible sizes of
// a value of type t (see above): every field CEL sees is a protobuf field
// of a kind the bound covers.
func protoCovers(t reflect.Type) bool {
	if v, ok := covered.Load(t); ok {
		return v.(bool)
	}
	ok := covers(t, map[reflect.Type]bool{})
	covered.Store(t, ok)
	return ok
}

var (
	typeMetaType = reflect.TypeFor[metav1.TypeMeta]()
	// boundedForms are the types with their own JSON form that the
	// bound covers (see above).
	boundedForms = map[reflect.Type]bool{
		reflect.TypeFor[metav1.Time]():        true,
		reflect.TypeFor[metav1.MicroTime]():   true,
		reflect.TypeFor[metav1.Duration]():    true,
		reflect.TypeFor[resource.Quantity]():  true,
		reflect.TypeFor[intstr.IntOrString](): true,
		reflect.TypeFor[metav1.FieldsV1]():    true,
	}
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
)

// covers is protoCovers without the cache; seen holds the struct types
// being walked (recursive types are covered if the rest of them is).
func covers(t reflect.Type, seen map[reflect.Type]bool) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return covers(t.Elem(), seen)
	case reflect.Map:
		return covers(t.Key(), seen) && covers(t.Elem(), seen)
	case reflect.Struct:
	default: // interfaces, funcs, channels
		return false
	}
	if boundedForms[t] {
		return true
	}
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return false
	}
	if seen[t] {
		return true
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
			continue
		case f.Anonymous && f.Type == typeMetaType:
			continue // apiVersion and kind: their lengths are added
		case !f.IsExported():
			continue // not seen by CEL's reflection nor by JSON
		case f.Tag.Get("protobuf") == "":
			return false
		}
		if !covers(f.Type, seen) {
			return false
		}
	}
	return true
}
