package kite_test

import (
	"strings"
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

// validationCRD has a required field, an int-or-string, a subtree that
// keeps unknown fields and an immutability transition rule on oldSelf.
func validationCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	crd := crontabs(group)
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	spec := root.Properties["spec"]
	spec.Required = []string{"image"}
	spec.Properties["port"] = apiextensionsv1.JSONSchemaProps{XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}}
	spec.Properties["extra"] = apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	spec.Properties["owner"] = apiextensionsv1.JSONSchemaProps{Type: "string",
		XValidations: apiextensionsv1.ValidationRules{{Rule: "self == oldSelf", Message: "owner is immutable"}}}
	root.Properties["spec"] = spec
	return crd
}

// TestCustomResourceValidationCases checks upstream's messages for
// required fields, int-or-string, preserve-unknown-fields and a
// transition rule, and that a rule over the cost limit refuses the CRD.
func TestCustomResourceValidationCases(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "validation.example.com"
	if _, err := createCRD(t, ctx, validationCRD(group)); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, "crontabs."+group)
	waitCRD(t, ctx, "crontabs."+group, established)
	cr := dynamic.NewForConfigOrDie(config(t)).Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}).Namespace("default")
	obj := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "CronTab", "metadata": map[string]any{"name": name}, "spec": spec}}
	}
	var err error
	var good *unstructured.Unstructured
	for range 200 {
		good, err = cr.Create(ctx, obj("good", map[string]any{"image": "i", "port": "http", "owner": "me", "extra": map[string]any{"anything": map[string]any{"deep": int64(1)}}}), metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("valid object: %v", err)
	}
	if v, found, _ := unstructured.NestedInt64(good.Object, "spec", "extra", "anything", "deep"); !found || v != 1 {
		t.Errorf("preserve-unknown-fields subtree pruned: %v", good.Object["spec"])
	}
	for _, tc := range []struct {
		name string
		spec map[string]any
		want string
	}{
		{"required", map[string]any{"cronSpec": "* * * * *"}, `spec.image: Required value`},
		{"int-or-string", map[string]any{"image": "i", "port": true}, `spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cr.Create(ctx, obj("bad-"+tc.name, tc.spec), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create: %v, want 422 with %q", err, tc.want)
			}
		})
	}
	t.Run("transition rule", func(t *testing.T) {
		unstructured.SetNestedField(good.Object, "someone else", "spec", "owner")
		_, err := cr.Update(ctx, good, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.owner: Invalid value: \"someone else\": owner is immutable") {
			t.Errorf("update against oldSelf: %v", err)
		}
	})
	t.Run("cost limit", func(t *testing.T) {
		crd := crontabs("cost.example.com")
		spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		spec.Properties["items"] = apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}}
		spec.XValidations = apiextensionsv1.ValidationRules{{Rule: "self.items.all(a, self.items.all(b, self.items.all(c, a + b + c != '')))"}}
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		_, err := createCRD(t, ctx, crd)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "estimated rule cost exceeds budget") {
			t.Errorf("create a CRD whose rule has no bound: %v", err)
		}
	})
}
