package apiextensions

import (
	"fmt"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kite-project/kite/storage/intern"
)

func managed(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "a.io/v1", "kind": "W",
		"metadata": map[string]any{"name": name, "uid": "uid-" + name, "labels": map[string]any{"app": "x"},
			"managedFields": []any{map[string]any{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]any{"f:spec": map[string]any{"f:size": map[string]any{}}}}}},
		"spec": map[string]any{"size": int64(1), "tags": []any{"a", "b"}},
	}}
}

// TestInternerKeepsContentAndSharesFieldSets: interning changes no value
// and makes equal managedFields field sets one map.
func TestInternerKeepsContentAndSharesFieldSets(t *testing.T) {
	in, table := newInterner(), intern.New(intern.Options{})
	a, b := managed("a"), managed("b")
	wantA, wantB := a.DeepCopy(), b.DeepCopy()
	in.intern(table, a)
	in.intern(table, b)
	if !reflect.DeepEqual(a.Object, wantA.Object) || !reflect.DeepEqual(b.Object, wantB.Object) {
		t.Fatalf("interning changed content:\n%v\n%v", a.Object, b.Object)
	}
	fieldsOf := func(u *unstructured.Unstructured) any {
		return u.Object["metadata"].(map[string]any)["managedFields"].([]any)[0].(map[string]any)["fieldsV1"]
	}
	if fmt.Sprintf("%p", fieldsOf(a)) != fmt.Sprintf("%p", fieldsOf(b)) {
		t.Error("equal field sets are not shared")
	}
}
