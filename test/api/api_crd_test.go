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
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// crontabs is upstream's documentation example CRD, with a default, an
// enum, a minimum and a CEL rule.
func crontabs(group string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "crontabs." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "crontabs", Singular: "crontab", Kind: "CronTab", ShortNames: []string{"ct"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {
							Type: "object",
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"cronSpec":    {Type: "string", Pattern: `^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$`},
								"image":       {Type: "string"},
								"replicas":    {Type: "integer", Minimum: ptr.To(1.0), Default: &apiextensionsv1.JSON{Raw: []byte("1")}},
								"policy":      {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"Allow"`)}, {Raw: []byte(`"Forbid"`)}}},
								"maxReplicas": {Type: "integer"},
							},
							XValidations: apiextensionsv1.ValidationRules{{Rule: "!has(self.maxReplicas) || self.replicas <= self.maxReplicas", Message: "replicas must not exceed maxReplicas"}},
						},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"ready": {Type: "boolean"}}},
					},
				}},
			}},
		},
	}
}

func crdClient(t testing.TB) *rest.RESTClient {
	t.Helper()
	cfg := config(t)
	cfg.GroupVersion = &apiextensionsv1.SchemeGroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = crdCodecs
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func createCRD(t testing.TB, ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	t.Helper()
	out := &apiextensionsv1.CustomResourceDefinition{}
	err := crdClient(t).Post().Resource("customresourcedefinitions").Body(crd).Do(ctx).Into(out)
	return out, err
}

func getCRD(t testing.TB, ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	out := &apiextensionsv1.CustomResourceDefinition{}
	err := crdClient(t).Get().Resource("customresourcedefinitions").Name(name).Do(ctx).Into(out)
	return out, err
}

func condition(crd *apiextensionsv1.CustomResourceDefinition, typ apiextensionsv1.CustomResourceDefinitionConditionType) apiextensionsv1.CustomResourceDefinitionCondition {
	for _, c := range crd.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return apiextensionsv1.CustomResourceDefinitionCondition{}
}

// TestCRDServedFromEstablished creates a CRD, waits for Established (well
// within a second), then creates, defaults, validates and reads custom
// resources with the dynamic client, and deletes the CRD with an
// instance: the instance goes first, then the CRD, then the resource.
func TestCRDServedFromEstablished(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	const group = "served.example.com"
	created, err := createCRD(t, ctx, crontabs(group))
	if err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	if created.Generation != 1 || len(created.Status.StoredVersions) != 1 || created.Status.StoredVersions[0] != "v1" {
		t.Errorf("created CRD: generation %d, storedVersions %v", created.Generation, created.Status.StoredVersions)
	}
	var crd *apiextensionsv1.CustomResourceDefinition
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, err = getCRD(t, ctx, "crontabs."+group)
		return err == nil && condition(crd, apiextensionsv1.Established).Status == apiextensionsv1.ConditionTrue, nil
	}); err != nil {
		t.Fatalf("CRD not Established: %+v", crd.Status)
	}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "crontabs"}
	dyn := dynamic.NewForConfigOrDie(config(t)).Resource(gvr).Namespace("default")
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("crontabs not served: %v", err)
	}
	// How soon a CRD is served after its create is a figure, not a
	// property: BenchmarkCRDServedAfterCreate measures it. The polls above
	// bound it for correctness.
	if c := condition(crd, apiextensionsv1.NamesAccepted); c.Reason != "NoConflicts" || crd.Status.AcceptedNames.Plural != "crontabs" {
		t.Errorf("NamesAccepted %+v, accepted names %+v", c, crd.Status.AcceptedNames)
	}

	ct := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": group + "/v1", "kind": "CronTab",
		"metadata": map[string]any{"name": "c1"},
		"spec":     map[string]any{"cronSpec": "* * * * */5", "image": "img", "unknown": "pruned"},
		"status":   map[string]any{"ready": true},
	}}
	out, err := dyn.Create(ctx, ct, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create crontab: %v", err)
	}
	if r, _, _ := unstructured.NestedInt64(out.Object, "spec", "replicas"); r != 1 {
		t.Errorf("spec.replicas %v, want the default 1", out.Object["spec"])
	}
	if _, found, _ := unstructured.NestedString(out.Object, "spec", "unknown"); found {
		t.Errorf("unknown field kept: %v", out.Object["spec"])
	}
	// Unknown fields: a warning by default, 400 with Strict, as upstream.
	body := []byte(`{"apiVersion":"` + group + `/v1","kind":"CronTab","metadata":{"name":"strict"},"spec":{"image":"i","bogus":1}}`)
	code, st, _ := raw(t, "POST", "/apis/"+group+"/v1/namespaces/default/crontabs?fieldValidation=Strict&dryRun=All", "application/json", "application/json", body)
	if want := `CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.bogus"`; code != 400 || st.Message != want {
		t.Errorf("Strict create with an unknown field: %d %q, want 400 %q", code, st.Message, want)
	}
	code, _, hdr := raw(t, "POST", "/apis/"+group+"/v1/namespaces/default/crontabs?dryRun=All", "application/json", "application/json", body)
	if code != 201 || !strings.Contains(hdr.Get("Warning"), `unknown field \"spec.bogus\"`) {
		t.Errorf("default create with an unknown field: %d, Warning %q", code, hdr.Get("Warning"))
	}
	if _, found := out.Object["status"]; found {
		t.Errorf("status kept on create with a status subresource: %v", out.Object["status"])
	}
	if out.GetGeneration() != 1 {
		t.Errorf("generation %d, want 1", out.GetGeneration())
	}
	etcdValue, err := shared.EtcdClient().Get(ctx, "/registry/"+group+"/crontabs/default/c1")
	if err != nil || len(etcdValue.Kvs) != 1 || !strings.HasPrefix(string(etcdValue.Kvs[0].Value), "{") {
		t.Errorf("etcd value under /registry/%s/crontabs/default/c1: %v %v", group, etcdValue, err)
	}

	for _, tc := range []struct {
		name string
		spec map[string]any
		want string
	}{
		{"pattern", map[string]any{"cronSpec": "bad"}, `spec.cronSpec: Invalid value: "bad": spec.cronSpec in body should match`},
		{"minimum", map[string]any{"replicas": int64(0)}, "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"},
		{"enum", map[string]any{"policy": "Maybe"}, `spec.policy: Unsupported value: "Maybe": supported values: "Allow", "Forbid"`},
		{"type", map[string]any{"image": int64(3)}, `spec.image: Invalid value: "integer": spec.image in body must be of type string: "integer"`},
		{"cel", map[string]any{"replicas": int64(3), "maxReplicas": int64(2)}, "spec: Invalid value: replicas must not exceed maxReplicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": group + "/v1", "kind": "CronTab",
				"metadata": map[string]any{"name": "bad-" + tc.name},
				"spec":     tc.spec,
			}}
			_, err := dyn.Create(ctx, bad, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create: %v, want 422 with %q", err, tc.want)
			}
		})
	}

	// Deleting the CRD deletes its instances, then itself.
	if err := crdClient(t).Delete().Resource("customresourcedefinitions").Name("crontabs." + group).Do(ctx).Error(); err != nil {
		t.Fatalf("delete CRD: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := getCRD(t, ctx, "crontabs."+group)
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("CRD not gone after delete")
	}
	if got, _ := shared.EtcdClient().Get(ctx, "/registry/"+group+"/", clientv3WithPrefix()...); got != nil && len(got.Kvs) != 0 {
		t.Errorf("%d custom resources left in etcd", len(got.Kvs))
	}
	if _, err := dyn.List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("list after the CRD went: %v, want 404", err)
	}
}

// TestBadCRDsRefused posts CRDs upstream refuses and checks its messages.
func TestBadCRDsRefused(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name   string
		change func(*apiextensionsv1.CustomResourceDefinition)
		want   string
	}{
		{"wrong name", func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "other.bad.example.com" },
			`metadata.name: Invalid value: "other.bad.example.com": must be spec.names.plural+"."+spec.group`},
		{"two storage versions", func(c *apiextensionsv1.CustomResourceDefinition) {
			v2 := *c.Spec.Versions[0].DeepCopy()
			v2.Name = "v2"
			c.Spec.Versions = append(c.Spec.Versions, v2)
		}, "must have exactly one version marked as storage version"},
		// One version: upstream's conversion to the internal type moves its
		// schema to spec.validation, and so do its error paths.
		{"non-structural", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{}
		}, "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"},
		{"webhook conversion", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
		}, "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := crontabs("bad.example.com")
			tc.change(crd)
			_, err := createCRD(t, ctx, crd)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create: %v, want 422 with %q", err, tc.want)
			}
		})
	}
}
