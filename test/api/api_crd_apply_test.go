package api_test

import (
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// TestCustomResourceServerSideApply applies a custom resource from two
// field managers, each owning one entry of a list the schema declares a
// map keyed by name: both entries stay, as structured merge with the
// schema's list type says, and managedFields name both managers.
func TestCustomResourceServerSideApply(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "apply.example.com"
	crd := crontabs(group)
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties["ports"] = apiextensionsv1.JSONSchemaProps{
		Type: "array", XListType: ptr.To("map"), XListMapKeys: []string{"name"},
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Required: []string{"name"},
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}, "port": {Type: "integer"}},
		}},
	}
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if _, err := createCRD(t, ctx, crd); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, "crontabs."+group)
	waitCRD(t, ctx, "crontabs."+group, established)
	cr := dynamic.NewForConfigOrDie(config(t)).Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}).Namespace("default")
	apply := func(manager, port string, number int64) (*unstructured.Unstructured, error) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "CronTab", "metadata": map[string]any{"name": "applied"},
			"spec": map[string]any{"ports": []any{map[string]any{"name": port, "port": number}}},
		}}
		return cr.Apply(ctx, "applied", obj, metav1.ApplyOptions{FieldManager: manager})
	}
	var err error
	for range 200 {
		if _, err = apply("first", "http", 80); !apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("apply by first: %v", err)
	}
	out, err := apply("second", "https", 443)
	if err != nil {
		t.Fatalf("apply by second: %v", err)
	}
	ports, _, _ := unstructured.NestedSlice(out.Object, "spec", "ports")
	if len(ports) != 2 {
		t.Errorf("ports %v, want both managers' entries", ports)
	}
	managers := map[string]bool{}
	for _, m := range out.GetManagedFields() {
		managers[m.Manager] = true
	}
	if !managers["first"] || !managers["second"] {
		t.Errorf("managedFields managers %v", managers)
	}
	if _, err := apply("second", "http", 8080); !apierrors.IsConflict(err) {
		t.Errorf("second manager taking first's entry: %v, want 409 conflict", err)
	}
}
