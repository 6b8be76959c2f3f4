package watchcache

import (
	"encoding/json"
	"fmt"
	"maps"

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
// content (docs/crds.md, "Memory"). The cache reads a cached object's
// content only to copy or encode it, and both start from a decode anyway
// (a deep copy of a map tree costs about what decoding its JSON does), so
// the cache keeps the JSON and decodes on each copy.
//
// managedFields, usually the larger part of the metadata and the same for
// objects written alike, are left out of raw and kept in ObjectMeta only,
// where the cache's intern table shares their field sets.
//
// A jsonObject is never changed once made, except by the cache's
// interning of its metadata before anyone else sees it: CachedObject
// copies it (into an *unstructured.Unstructured) before any setter runs.
type jsonObject struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// raw is the object's JSON, managedFields left out when it has some.
	raw []byte
}

var _ metaObject = (*jsonObject)(nil)

// compactUnstructured returns the jsonObject of u, or u itself when its
// metadata does not convert to ObjectMeta (malformed values: the cache
// keeps such an object as it came rather than change what it serves).
func compactUnstructured(u *unstructured.Unstructured) (metaObject, error) {
	j := &jsonObject{TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}}
	content := u.Object
	if md, ok := u.Object["metadata"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(md, &j.ObjectMeta); err != nil {
			return u, nil
		}
		if len(j.ManagedFields) > 0 {
			md = maps.Clone(md)
			delete(md, "managedFields")
			content = maps.Clone(u.Object)
			content["metadata"] = md
		}
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s/%s for the cache: %w", j.Kind, j.Namespace, j.Name, err)
	}
	j.raw = raw
	return j, nil
}

// DeepCopyObject implements runtime.Object. It returns the object decoded,
// an *unstructured.Unstructured the caller owns, not a jsonObject: what
// the cache hands out is the object as its store gave it.
func (j *jsonObject) DeepCopyObject() runtime.Object { return j.unstructured() }

func (j *jsonObject) unstructured() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j.raw); err != nil {
		// raw is what compactUnstructured encoded from a decoded
		// object: it always decodes.
		panic(fmt.Sprintf("watchcache: cached JSON of %s %s/%s does not decode: %v", j.Kind, j.Namespace, j.Name, err))
	}
	if len(j.ManagedFields) > 0 {
		u.SetManagedFields(j.ManagedFields)
	}
	return u
}

// UnstructuredContent returns the object's content decoded, for attribute
// functions that read fields beyond the metadata (a CRD's selectable
// fields).
func (j *jsonObject) UnstructuredContent() map[string]any { return j.unstructured().Object }
