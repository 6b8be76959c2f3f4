package resourceset

import (
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/apiextensions"
	"github.com/kite-project/kite/registry/builtin"
)

// TestDescribeGivesSubresourcesTheirOwnKindOnlyWhenTheyHaveOne describes a
// built-in resource and a custom resource with the same subresources
// (scale and status) through the one Describe: subresources in name order,
// scale as autoscaling/v1 Scale, status as the parent (no object of its
// own), as upstream's OpenAPI describes them; pods/binding as v1 Binding.
func TestDescribeGivesSubresourcesTheirOwnKindOnlyWhenTheyHaveOne(t *testing.T) {
	scale := autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	crd, err := apiextensions.CustomResourceStrategy(widgets(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	type sub struct {
		name string
		gvk  schema.GroupVersionKind
	}
	for _, tc := range []struct {
		name     string
		strat    *registry.Strategy
		wantList bool
		want     []sub
	}{
		{"deployments", builtinStrategy(t, "deployments.apps"), true, []sub{{"scale", scale}, {"status", schema.GroupVersionKind{}}}},
		{"custom resource", crd, true, []sub{{"scale", scale}, {"status", schema.GroupVersionKind{}}}},
		{"pods", builtinStrategy(t, "pods"), true, []sub{{"binding", schema.GroupVersionKind{Version: "v1", Kind: "Binding"}}, {"ephemeralcontainers", schema.GroupVersionKind{}}, {"eviction", schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}}, {"resize", schema.GroupVersionKind{}}, {"status", schema.GroupVersionKind{}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Describe(tc.strat)
			if r.GVK != tc.strat.Kind || r.Plural != tc.strat.Resource || r.Object == nil || (r.List != nil) != tc.wantList {
				t.Errorf("resource: %v %q object %T list %T", r.GVK, r.Plural, r.Object, r.List)
			}
			var got []sub
			for _, s := range r.Subresources {
				got = append(got, sub{s.Name, s.GVK})
				if (s.Object != nil) != !s.GVK.Empty() {
					t.Errorf("%s: object %T with kind %v", s.Name, s.Object, s.GVK)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("subresources %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("subresource %d: %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func builtinStrategy(t *testing.T, groupResource string) *registry.Strategy {
	t.Helper()
	for _, s := range builtin.All(time.Now) {
		if s.GroupResource().String() == groupResource {
			return s
		}
	}
	t.Fatalf("no built-in strategy for %s", groupResource)
	return nil
}

func widgets() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
					"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}}},
				}}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				}}},
		},
	}
}
