package admission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// thingsCRD serves things.equiv.example.com in v1 (storage) and v2,
// conversion None.
func thingsCRD() *apiextensionsv1.CustomResourceDefinition {
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}}}}}}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.equiv.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "equiv.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Singular: "thing", Kind: "Thing"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version("v1", true), version("v2", false)},
		},
	}
}

// TestWebhookMatchPolicyEquivalent: a webhook registered for a CRD's v1
// (matchPolicy Equivalent, v1's default) is called for a request through
// v2 with the object converted to v1 (kind and resource v1, requestKind
// and requestResource v2), and its patch reaches the object stored
// through v2; one with matchPolicy Exact is not called. A webhook for
// events.k8s.io/v1 events sees a core/v1 event's create as an
// events.k8s.io/v1 Event (the same storage).
func TestWebhookMatchPolicyEquivalent(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	client := kubernetes.NewForConfigOrDie(config(t))
	crds := apiextensionsclient.NewForConfigOrDie(config(t))
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, thingsCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = crds.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), "things.equiv.example.com", metav1.DeleteOptions{})
	})
	ns := webhookNamespace(t, client)
	dyn := dynamic.NewForConfigOrDie(config(t))
	thingsV1 := dyn.Resource(schema.GroupVersionResource{Group: "equiv.example.com", Version: "v1", Resource: "things"}).Namespace(ns)
	thingsV2 := dyn.Resource(schema.GroupVersionResource{Group: "equiv.example.com", Version: "v2", Resource: "things"}).Namespace(ns)
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err1 := thingsV1.List(ctx, metav1.ListOptions{})
		_, err2 := thingsV2.List(ctx, metav1.ListOptions{})
		return err1 == nil && err2 == nil, nil
	}); err != nil {
		t.Fatal("things were never served")
	}

	h := newHookServer(t, func(path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if path != "/mutate" || req.Kind.Kind != "Thing" {
			return allow()
		}
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: []byte(`[{"op":"add","path":"/metadata/labels","value":{"mutated":"yes"}}]`)}
	})
	rules := func(group, version, resource string) []admissionregistrationv1.RuleWithOperations {
		return append(configMapRule(admissionregistrationv1.Create), admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}}})
	}
	equivalent := validatingHook("equivalent.adm.example.com", h, "/equivalent", ns)
	equivalent.Rules = rules("equiv.example.com", "v1", "things")
	exact := validatingHook("exact.adm.example.com", h, "/exact", ns)
	exact.Rules, exact.MatchPolicy = equivalent.Rules, ptr.To(admissionregistrationv1.Exact)
	events := validatingHook("events.adm.example.com", h, "/events", ns)
	events.Rules = rules("events.k8s.io", "v1", "events")
	installValidating(t, client, ns, h, equivalent, exact, events)
	mutate := mutatingHook("mutate.adm.example.com", h, "/mutate", ns)
	mutate.Rules = equivalent.Rules
	installMutating(t, client, ns, h, mutate)

	thing := func(version, name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "equiv.example.com/" + version, "kind": "Thing",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": int64(3)}}}
	}
	created, err := thingsV2.Create(ctx, thing("v2", "through-v2"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create through v2: %v", err)
	}
	if created.GetLabels()["mutated"] != "yes" || created.GetAPIVersion() != "equiv.example.com/v2" {
		t.Errorf("created %s with labels %v, want v2 with the v1 webhook's patch", created.GetAPIVersion(), created.GetLabels())
	}
	for _, path := range []string{"/equivalent", "/mutate"} {
		seen := h.seen(path, "through-v2")
		if len(seen) != 1 {
			t.Fatalf("%s saw the v2 create %d times, want 1", path, len(seen))
		}
		r := seen[0].req
		if r.Kind != (metav1.GroupVersionKind{Group: "equiv.example.com", Version: "v1", Kind: "Thing"}) || r.Resource.Version != "v1" ||
			r.RequestKind == nil || r.RequestKind.Version != "v2" || r.RequestResource == nil || r.RequestResource.Version != "v2" ||
			!strings.Contains(string(r.Object.Raw), `"apiVersion":"equiv.example.com/v1"`) {
			t.Errorf("%s got kind %v resource %v requestKind %v requestResource %v object %s, want the v1 object of a v2 request",
				path, r.Kind, r.Resource, r.RequestKind, r.RequestResource, r.Object.Raw)
		}
	}
	if n := len(h.seen("/exact", "through-v2")); n != 0 {
		t.Errorf("the Exact webhook saw the v2 create %d times, want 0", n)
	}
	if _, err := thingsV1.Create(ctx, thing("v1", "through-v1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through v1: %v", err)
	}
	for _, path := range []string{"/equivalent", "/exact"} {
		if seen := h.seen(path, "through-v1"); len(seen) != 1 || seen[0].req.RequestKind.Version != "v1" {
			t.Errorf("%s saw the v1 create %+v, want once as v1", path, seen)
		}
	}

	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "core-event"}, Message: "hello", Reason: "Testing", Type: corev1.EventTypeNormal,
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "x"}, Source: corev1.EventSource{Component: "test"}}
	if _, err := client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a core event: %v", err)
	}
	seen := h.seen("/events", "core-event")
	if len(seen) != 1 {
		t.Fatalf("the events.k8s.io webhook saw the core event %d times, want 1", len(seen))
	}
	if r := seen[0].req; r.Kind.Group != "events.k8s.io" || r.RequestKind.Group != "" || !strings.Contains(string(r.Object.Raw), `"note":"hello"`) {
		t.Errorf("the events.k8s.io webhook got kind %v requestKind %v object %s, want an events.k8s.io/v1 Event with note hello", r.Kind, r.RequestKind, r.Object.Raw)
	}
}
