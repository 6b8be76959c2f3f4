package watchcache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// jsonObject is how the cache holds an unstructured object (a custom
// resource): its JSON, with its metadata decoded beside it for the
// getters that filtering, keys and versions read.
//
// Decoded, an unstructured object is a tree of Go maps and interfaces,
// several times the size of its JSON and of a typed object of the same
// content (docs/crds.md). The cache reads a cached object's content only
// to copy or encode it, and both start from a decode anyway (a deep copy
// of a map tree costs about what decoding its JSON does), so the cache
// keeps the JSON and decodes on each copy.
//
// managedFields, usually the larger part of the metadata and the same for
// objects written alike, are left out of raw and kept in ObjectMeta only,
// where the cache's intern table shares their field sets; a copy splices
// them back into the JSON before decoding it (a conversion from the typed
// entries would cost more than the decode).
//
// A jsonObject is never changed once made, except by the cache's
// interning of its metadata before anyone else sees it: CachedObject
// copies it (into an *unstructured.Unstructured) before any setter runs.
type jsonObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// raw is the object's JSON, managedFields left out.
	raw []byte
	// fieldsAt is where in raw the managedFields go back: just after the
	// metadata's opening brace; 0 when the object has none.
	fieldsAt int
}

var _ metaObject = (*jsonObject)(nil)

// compactUnstructured returns the jsonObject of u, or u itself when its
// metadata does not convert to ObjectMeta or it does not encode (malformed
// values: the cache keeps such an object as it came rather than change
// what it serves).
func compactUnstructured(u *unstructured.Unstructured) metaObject {
	j := &jsonObject{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
	md, hasMeta := u.Object["metadata"].(map[string]any)
	if hasMeta {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &j.ObjectMeta); err != nil {
			return u
		}
	}
	if !hasMeta || len(j.ManagedFields) == 0 {
		raw, err := json.Marshal(u.Object)
		if err != nil {
			return u
		}
		j.raw = raw
		return j
	}
	// The object's JSON as json.Marshal writes a map (keys sorted), with
	// the metadata's place noted.
	md = maps.Clone(md)
	delete(md, "managedFields")
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(u.Object)) {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(k)
		if err != nil {
			return u
		}
		b.Write(key)
		b.WriteByte(':')
		v := u.Object[k]
		if k == "metadata" {
			j.fieldsAt = b.Len() + 1
			v = md
		}
		val, err := json.Marshal(v)
		if err != nil {
			return u
		}
		b.Write(val)
	}
	b.WriteByte('}')
	j.raw = b.Bytes()
	return j
}

// DeepCopyObject implements runtime.Object. It returns the object decoded,
// an *unstructured.Unstructured the caller owns, not a jsonObject: what
// the cache hands out is the object as its store gave it.
func (j *jsonObject) DeepCopyObject() runtime.Object { return j.unstructured() }

func (j *jsonObject) unstructured() *unstructured.Unstructured {
	raw := j.raw
	if j.fieldsAt > 0 {
		fields, err := json.Marshal(j.ManagedFields)
		if err != nil {
			panic(fmt.Sprintf("watchcache: managedFields of %s %s/%s do not encode: %v", j.Kind, j.Namespace, j.Name, err))
		}
		full := make([]byte, 0, len(raw)+len(fields)+len(`"managedFields":,`))
		full = append(full, raw[:j.fieldsAt]...)
		full = append(full, `"managedFields":`...)
		full = append(full, fields...)
		if raw[j.fieldsAt] != '}' {
			full = append(full, ',')
		}
		raw = append(full, raw[j.fieldsAt:]...)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		// raw is what compactUnstructured encoded from a decoded
		// object: it always decodes.
		panic(fmt.Sprintf("watchcache: cached JSON of %s %s/%s does not decode: %v", j.Kind, j.Namespace, j.Name, err))
	}
	return u
}

// UnstructuredContent returns the object's content decoded, for attribute
// functions that read fields beyond the metadata (a CRD's selectable
// fields).
func (j *jsonObject) UnstructuredContent() map[string]any { return j.unstructured().Object }
