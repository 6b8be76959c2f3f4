package openapi_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kite-project/kite/apiserver/openapi"
)

// Group versions set together are each described as if set alone, and
// removing one takes its document and its schema's definitions, leaving
// the others.
func TestSetGroupVersionsAtOnce(t *testing.T) {
	widget := func(group string) openapi.Resource {
		gvk := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Widget"}
		s := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}, Properties: map[string]spec.Schema{
			"spec": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}},
		}}}
		return openapi.Resource{GVK: gvk, Plural: "widgets", Namespaced: true, Verbs: []string{"get", "list"}, Schema: &s, DefinitionName: "com.example." + group + ".v1.Widget"}
	}
	a, b, c := widget("a"), widget("b"), widget("c")
	oa, err := openapi.New(openapi.Options{Resources: []openapi.Resource{a}})
	if err != nil {
		t.Fatal(err)
	}
	gv := func(r openapi.Resource) schema.GroupVersion { return r.GVK.GroupVersion() }
	if err := oa.SetGroupVersions(map[schema.GroupVersion][]openapi.Resource{gv(b): {b}, gv(c): {c}}); err != nil {
		t.Fatal(err)
	}
	described := func(r openapi.Resource) bool {
		doc := oa.V3(gv(r))
		if doc == nil || doc.Components == nil {
			return false
		}
		_, ok := doc.Components.Schemas[r.DefinitionName]
		return ok && oa.Definitions()[r.DefinitionName] != nil
	}
	for _, r := range []openapi.Resource{a, b, c} {
		if !described(r) {
			t.Errorf("%s not described after both were set at once", gv(r))
		}
	}
	if err := oa.SetGroupVersions(map[schema.GroupVersion][]openapi.Resource{gv(b): nil}); err != nil {
		t.Fatal(err)
	}
	if oa.V3(gv(b)) != nil || oa.Definitions()[b.DefinitionName] != nil {
		t.Errorf("%s still described after its removal", gv(b))
	}
	if !described(a) || !described(c) {
		t.Errorf("removing %s took others' documents", gv(b))
	}
	if err := oa.SetGroupVersions(map[schema.GroupVersion][]openapi.Resource{gv(a): {c}}); err == nil {
		t.Error("a resource set under another group version was accepted")
	}
}
