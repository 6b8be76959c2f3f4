package apiextensions

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/storage/intern"
)

// maxSharedFieldSets bounds how many distinct managedFields field sets
// one resource's interner remembers.
const maxSharedFieldSets = 1024

// interner shares, between the cached custom resources of one resource,
// what decoded JSON holds once per object: map keys and string values (one
// copy of each through the watch cache's table) and the field sets of
// managedFields (objects written by one client carry equal ones). Like
// every Intern it runs on the watch cache's ingest goroutine alone.
type interner struct {
	fieldSets map[string]any // by JSON
}

func newInterner() *interner { return &interner{fieldSets: map[string]any{}} }

func (in *interner) intern(t *intern.Table, obj runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	out := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		if meta, ok := v.(map[string]any); ok && k == "metadata" {
			out["metadata"] = internMeta(t, meta)
			continue
		}
		out[t.String(k)] = internValue(t, v)
	}
	u.Object = out
	meta, _ := out["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		entry, ok := e.(map[string]any)
		if !ok {
			continue
		}
		set, ok := entry["fieldsV1"]
		if !ok {
			continue
		}
		key, err := json.Marshal(set)
		if err != nil {
			continue
		}
		if shared, ok := in.fieldSets[string(key)]; ok {
			entry["fieldsV1"] = shared
		} else if len(in.fieldSets) < maxSharedFieldSets {
			in.fieldSets[string(key)] = set
		}
	}
}

// internMeta interns the metadata's keys, labels, annotations and
// managedFields; names, UIDs, versions and times are one per object and
// would only spend the table's budget.
func internMeta(t *intern.Table, meta map[string]any) map[string]any {
	out := make(map[string]any, len(meta))
	for k, v := range meta {
		switch k {
		case "labels", "annotations", "managedFields":
			out[t.String(k)] = internValue(t, v)
		default:
			out[t.String(k)] = v
		}
	}
	return out
}

// internValue returns v with its map keys and strings interned.
func internValue(t *intern.Table, v any) any {
	switch x := v.(type) {
	case string:
		return t.String(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[t.String(k)] = internValue(t, v)
		}
		return out
	case []any:
		for i := range x {
			x[i] = internValue(t, x[i])
		}
		return x
	}
	return v
}
