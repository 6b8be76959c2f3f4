package openapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kite-project/kite/apiserver/openapi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type response struct {
	code int
	body []byte
	hdr  http.Header
}

func get(t *testing.T, srv *httptest.Server, path string, hdr map[string]string) response {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, body, resp.Header}
}

func TestServing(t *testing.T) {
	oa := newService(t)
	srv := httptest.NewServer(oa)
	defer srv.Close()

	t.Run("v2 JSON by default", func(t *testing.T) {
		r := get(t, srv, "/openapi/v2", nil)
		if r.code != 200 || r.hdr.Get("Content-Type") != "application/json" {
			t.Fatalf("%d %q", r.code, r.hdr.Get("Content-Type"))
		}
		var sw spec.Swagger
		if err := json.Unmarshal(r.body, &sw); err != nil {
			t.Fatal(err)
		}
		if sw.Swagger != "2.0" || sw.Definitions["io.k8s.api.core.v1.Pod"].Type[0] != "object" {
			t.Errorf("v2 document: swagger %q, Pod %+v", sw.Swagger, sw.Definitions["io.k8s.api.core.v1.Pod"].Type)
		}
		etag := r.hdr.Get("Etag")
		if r := get(t, srv, "/openapi/v2", map[string]string{"If-None-Match": etag}); r.code != http.StatusNotModified {
			t.Errorf("If-None-Match with the ETag: %d, want 304", r.code)
		}
	})
	t.Run("v2 protobuf as kubectl asks", func(t *testing.T) {
		r := get(t, srv, "/openapi/v2", map[string]string{"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json"})
		if r.code != 200 || r.hdr.Get("Content-Type") != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" {
			t.Fatalf("%d %q", r.code, r.hdr.Get("Content-Type"))
		}
		var doc openapi_v2.Document
		if err := proto.Unmarshal(r.body, &doc); err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
			found = found || d.GetName() == "io.k8s.api.core.v1.PodSpec"
		}
		if !found {
			t.Error("protobuf document has no io.k8s.api.core.v1.PodSpec")
		}
	})
	t.Run("v2 in an unknown format is 406", func(t *testing.T) {
		if r := get(t, srv, "/openapi/v2", map[string]string{"Accept": "text/html"}); r.code != 406 {
			t.Errorf("%d", r.code)
		}
	})

	var disc struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	r := get(t, srv, "/openapi/v3", nil)
	if err := json.Unmarshal(r.body, &disc); err != nil || r.code != 200 {
		t.Fatalf("/openapi/v3: %d %v %s", r.code, err, r.body)
	}
	var keys []string
	for k, v := range disc.Paths {
		keys = append(keys, k)
		if !strings.HasPrefix(v.ServerRelativeURL, "/openapi/v3/"+k+"?hash=") {
			t.Errorf("%s: serverRelativeURL %q", k, v.ServerRelativeURL)
		}
	}
	slices.Sort(keys)
	if want := []string{"api/v1", "apis/coordination.k8s.io/v1"}; !slices.Equal(keys, want) {
		t.Errorf("/openapi/v3 paths %v, want %v", keys, want)
	}

	t.Run("v3 by hash is immutable", func(t *testing.T) {
		r := get(t, srv, disc.Paths["apis/coordination.k8s.io/v1"].ServerRelativeURL, nil)
		if r.code != 200 || r.hdr.Get("Cache-Control") != "public, immutable" {
			t.Fatalf("%d, Cache-Control %q", r.code, r.hdr.Get("Cache-Control"))
		}
		var doc struct {
			OpenAPI    string                     `json:"openapi"`
			Paths      map[string]json.RawMessage `json:"paths"`
			Components struct {
				Schemas map[string]json.RawMessage `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(r.body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.OpenAPI != "3.0.0" {
			t.Errorf("openapi %q", doc.OpenAPI)
		}
		if _, ok := doc.Paths["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"]; !ok {
			t.Error("lease path missing")
		}
		if _, ok := doc.Paths["/api/v1/namespaces/{namespace}/pods"]; ok {
			t.Error("the coordination document carries core paths")
		}
		if _, ok := doc.Components.Schemas["io.k8s.api.core.v1.PodSpec"]; ok {
			t.Error("the coordination document carries PodSpec, which none of its paths needs")
		}
	})
	t.Run("v3 by a stale hash redirects", func(t *testing.T) {
		r := get(t, srv, "/openapi/v3/api/v1?hash=stale", nil)
		if r.code != http.StatusMovedPermanently || r.hdr.Get("Location") != disc.Paths["api/v1"].ServerRelativeURL {
			t.Errorf("%d to %q", r.code, r.hdr.Get("Location"))
		}
	})
	for _, path := range []string{"/openapi/v3/apis/apps/v1", "/openapi/v4", "/openapi/v3/"} {
		if r := get(t, srv, path, nil); r.code != 404 {
			t.Errorf("%s: %d, want 404", path, r.code)
		}
	}
}

func TestDefinitions(t *testing.T) {
	defs := newService(t).V2().Definitions
	ext := func(def, prop, key string) any {
		s := defs[def]
		if prop != "" {
			s = s.Properties[prop]
		}
		return s.Extensions[key]
	}
	gvk := func(g, v, k string) []any { return []any{map[string]any{"group": g, "version": v, "kind": k}} }
	tests := []struct {
		name      string
		got, want any
	}{
		{"Pod's GVK", ext("io.k8s.api.core.v1.Pod", "", "x-kubernetes-group-version-kind"), gvk("", "v1", "Pod")},
		{"PodList's GVK", ext("io.k8s.api.core.v1.PodList", "", "x-kubernetes-group-version-kind"), gvk("", "v1", "PodList")},
		{"Lease's GVK", ext("io.k8s.api.coordination.v1.Lease", "", "x-kubernetes-group-version-kind"), gvk("coordination.k8s.io", "v1", "Lease")},
		{"containers patch strategy", ext("io.k8s.api.core.v1.PodSpec", "containers", "x-kubernetes-patch-strategy"), "merge"},
		{"containers patch merge key", ext("io.k8s.api.core.v1.PodSpec", "containers", "x-kubernetes-patch-merge-key"), "name"},
		{"containers list type", ext("io.k8s.api.core.v1.PodSpec", "containers", "x-kubernetes-list-type"), "map"},
		{"containers list map keys", ext("io.k8s.api.core.v1.PodSpec", "containers", "x-kubernetes-list-map-keys"), []string{"name"}},
		{"ownerReferences list map keys", ext("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", "x-kubernetes-list-map-keys"), []string{"uid"}},
		{"Time is a date-time string", []any{defs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"].Type, defs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"].Format}, []any{spec.StringOrArray{"string"}, "date-time"}},
		{"IntOrString in v2", []any{defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"].Type, defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"].Format}, []any{spec.StringOrArray{"string"}, "int-or-string"}},
		{"Quantity in v2", defs["io.k8s.apimachinery.pkg.api.resource.Quantity"].Type, spec.StringOrArray{"string"}},
		{"Container requires only name", defs["io.k8s.api.core.v1.Container"].Required, []string{"name"}},
		{"PodSpec requires containers", defs["io.k8s.api.core.v1.PodSpec"].Required, []string{"containers"}},
		{"+optional without omitempty is not required", defs["io.k8s.api.core.v1.GRPCAction"].Required, []string{"port"}},
		{"+required with omitempty is required", slices.Contains(defs["io.k8s.api.core.v1.ContainerRestartRule"].Required, "action"), true},
		{"TypeMeta is flattened into Pod", []bool{defs["io.k8s.api.core.v1.Pod"].Properties["kind"].Type != nil, defs["io.k8s.api.core.v1.Pod"].Properties["TypeMeta"].Type != nil}, []bool{true, false}},
		{"descriptions from SwaggerDoc", defs["io.k8s.api.core.v1.Container"].Properties["image"].Description, corev1.Container{}.SwaggerDoc()["image"]},
	}
	for _, tc := range tests {
		gotJSON, _ := json.Marshal(tc.got)
		wantJSON, _ := json.Marshal(tc.want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: got %s, want %s", tc.name, gotJSON, wantJSON)
		}
	}

	v3 := newService(t).V3(schema.GroupVersion{Version: "v1"}).Components.Schemas
	ios := v3["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
	if ios.Type != nil || len(ios.OneOf) != 2 || ios.OneOf[0].Type[0] != "integer" || ios.OneOf[1].Type[0] != "string" {
		t.Errorf("IntOrString in v3: %+v", ios)
	}
	if q := v3["io.k8s.apimachinery.pkg.api.resource.Quantity"]; len(q.OneOf) != 2 || q.OneOf[1].Type[0] != "number" {
		t.Errorf("Quantity in v3: %+v", q)
	}
}

func TestByteFields(t *testing.T) {
	oa, err := openapi.New(openapi.Options{Resources: []openapi.Resource{{
		GVK: corev1.SchemeGroupVersion.WithKind("Secret"), Plural: "secrets", Namespaced: true, Verbs: []string{"get"}, Object: &corev1.Secret{},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	data := oa.V2().Definitions["io.k8s.api.core.v1.Secret"].Properties["data"]
	if v := data.AdditionalProperties.Schema; v.Type[0] != "string" || v.Format != "byte" {
		t.Errorf("secret data values: %+v", v)
	}
}

func TestOperations(t *testing.T) {
	paths := newService(t).V2().Paths.Paths
	tests := []struct {
		path, method, id string
		params           []string // query parameters that must be there
	}{
		{"/api/v1/namespaces/{namespace}/pods", "GET", "listCoreV1NamespacedPod", []string{"labelSelector", "fieldSelector", "watch", "sendInitialEvents"}},
		{"/api/v1/namespaces/{namespace}/pods", "POST", "createCoreV1NamespacedPod", []string{"dryRun", "fieldManager", "fieldValidation"}},
		{"/api/v1/namespaces/{namespace}/pods", "DELETE", "deleteCoreV1CollectionNamespacedPod", []string{"gracePeriodSeconds"}},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "GET", "readCoreV1NamespacedPod", nil},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "PUT", "replaceCoreV1NamespacedPod", []string{"fieldValidation"}},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "PATCH", "patchCoreV1NamespacedPod", []string{"fieldValidation", "force"}},
		{"/api/v1/namespaces/{namespace}/pods/{name}", "DELETE", "deleteCoreV1NamespacedPod", []string{"propagationPolicy"}},
		{"/api/v1/namespaces/{namespace}/pods/{name}/status", "PATCH", "patchCoreV1NamespacedPodStatus", []string{"fieldValidation"}},
		{"/api/v1/pods", "GET", "listCoreV1PodForAllNamespaces", []string{"watch"}},
		{"/api/v1/nodes/{name}", "GET", "readCoreV1Node", nil},
		{"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", "PUT", "replaceCoordinationV1NamespacedLease", []string{"fieldValidation"}},
	}
	for _, tc := range tests {
		item, ok := paths[tc.path]
		if !ok {
			t.Errorf("no path %s", tc.path)
			continue
		}
		op := map[string]*spec.Operation{"GET": item.Get, "POST": item.Post, "PUT": item.Put, "PATCH": item.Patch, "DELETE": item.Delete}[tc.method]
		if op == nil {
			t.Errorf("%s %s: no operation", tc.method, tc.path)
			continue
		}
		if op.ID != tc.id {
			t.Errorf("%s %s: id %q, want %q", tc.method, tc.path, op.ID, tc.id)
		}
		var names []string
		for _, p := range op.Parameters {
			names = append(names, p.Name)
		}
		for _, want := range tc.params {
			if !slices.Contains(names, want) {
				t.Errorf("%s %s: no %s parameter in %v", tc.method, tc.path, want, names)
			}
		}
	}
	if _, ok := paths["/api/v1/namespaces/{namespace}/nodes"]; ok {
		t.Error("cluster-scoped nodes got a namespaced path")
	}
	if p := paths["/api/v1/namespaces/{namespace}/pods/{name}"].Patch; !slices.Contains(p.Consumes, "application/strategic-merge-patch+json") || !slices.Contains(p.Consumes, "application/apply-patch+yaml") {
		t.Errorf("patch consumes %v", p.Consumes)
	}
}

// TestDefinitionsFeedTypeConverter checks that the schemas are complete
// enough for server-side apply's type converter to type a real pod.
func TestDefinitionsFeedTypeConverter(t *testing.T) {
	tc, err := managedfields.NewTypeConverter(newService(t).Definitions(), false)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}, {Name: "d", Image: "busybox"}}},
	}
	typed, err := tc.ObjectToTyped(pod)
	if err != nil {
		t.Fatalf("typing a pod: %v", err)
	}
	fields, err := typed.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	// Containers are a map list keyed by name, so each is its own element.
	if s := fields.String(); !strings.Contains(s, `.spec.containers[name="c"].image`) || !strings.Contains(s, `.spec.containers[name="d"]`) {
		t.Errorf("field set does not key containers by name:\n%s", s)
	}
}

func TestNewRefusesIncompleteResources(t *testing.T) {
	pod := corev1.SchemeGroupVersion.WithKind("Pod")
	for _, tc := range []struct {
		name string
		r    []openapi.Resource
	}{
		{"none", nil},
		{"no plural", []openapi.Resource{{GVK: pod, Object: &corev1.Pod{}}}},
		{"no object", []openapi.Resource{{GVK: pod, Plural: "pods"}}},
		{"no kind", []openapi.Resource{{Plural: "pods", Object: &corev1.Pod{}}}},
		{"list without a list type", []openapi.Resource{{GVK: pod, Plural: "pods", Object: &corev1.Pod{}, Verbs: []string{"list"}}}},
	} {
		if _, err := openapi.New(openapi.Options{Resources: tc.r}); err == nil {
			t.Errorf("%s: New accepted it", tc.name)
		}
	}
}
