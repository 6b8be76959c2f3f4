package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
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

// TestCustomResourceValidationRatchets tightens a CRD's schema under an
// existing object: an update that leaves the now-invalid value alone is
// accepted (ratcheting, GA upstream), one that changes it to another
// invalid value is refused.
func TestCustomResourceValidationRatchets(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "ratchet.example.com"
	name := "crontabs." + group
	if _, err := createCRD(t, ctx, crontabs(group)); err != nil {
		t.Fatal(err)
	}
	defer deleteCRD(t, ctx, name)
	waitCRD(t, ctx, name, established)
	cr := dynamic.NewForConfigOrDie(config(t)).Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}).Namespace("default")
	obj := crontab(group, "old", nil)
	unstructured.SetNestedField(obj.Object, "a-long-image-name", "spec", "image")
	var err error
	for range 200 {
		if _, err = cr.Create(ctx, obj, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	cur, err := getCRD(t, ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	spec := cur.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	image := spec.Properties["image"]
	image.MaxLength = ptr.To[int64](5)
	spec.Properties["image"] = image
	cur.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if err := crdClient(t).Put().Resource("customresourcedefinitions").Name(name).Body(cur).Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
	// Wait for the tightened schema: a new long image is refused.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		probe := crontab(group, "probe", nil)
		unstructured.SetNestedField(probe.Object, "too-long-image", "spec", "image")
		_, err := cr.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err), nil
	}); err != nil {
		t.Fatal("tightened schema never applied")
	}
	got, err := cr.Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedField(got.Object, "0 * * * *", "spec", "cronSpec")
	if got, err = cr.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Errorf("update leaving the old invalid value alone: %v", err)
	}
	unstructured.SetNestedField(got.Object, "another-long-one", "spec", "image")
	if _, err := cr.Update(ctx, got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.image: Too long: may not be more than 5 bytes") {
		t.Errorf("update to a new invalid value: %v", err)
	}
}
