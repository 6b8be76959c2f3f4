package openapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kite-project/kite/apiserver/openapi"
)

// crdResource is a custom resource described by a schema given as JSON.
func crdResource(t *testing.T, kind, schemaJSON string) openapi.Resource {
	t.Helper()
	var s spec.Schema
	if err := json.Unmarshal([]byte(schemaJSON), &s); err != nil {
		t.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "v2.example.com", Version: "v1", Kind: kind}
	return openapi.Resource{GVK: gvk, Plural: strings.ToLower(kind) + "s", Namespaced: true,
		Verbs: []string{"get", "list", "create", "update", "patch", "delete"}, Schema: &s, DefinitionName: "com.example.v2.v1." + kind}
}

// widgetSchema has what OpenAPI v2 cannot say beside what it can: anyOf
// (int-or-string), oneOf, allOf, not, nullable, preserved unknown fields,
// schema-valued additionalProperties.
const widgetSchema = `{
  "type": "object",
  "properties": {
    "spec": {
      "type": "object",
      "required": ["size", "note"],
      "properties": {
        "size": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "mode": {"type": "string", "oneOf": [{"enum": ["a"]}, {"enum": ["b"]}]},
        "both": {"type": "string", "allOf": [{"minLength": 1}], "not": {"enum": ["x"]}},
        "note": {"type": "string", "nullable": true},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "limits": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}},
        "ports": {"type": "object", "additionalProperties": {"type": "object", "properties": {"port": {"type": "integer", "format": "int32"}}}},
        "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"kept": {"type": "string"}}},
        "list": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true}}}}
      }
    }
  }
}`

// TestV2DocumentCarriesSchemasV2CannotExpress serves /openapi/v2, JSON and
// protobuf, with custom resource schemas that use anyOf, oneOf, allOf,
// not, nullable and schema-valued additionalProperties: as upstream's v2
// builder (ToStructuralOpenAPIV2), what v2 cannot express is dropped and
// the rest kept, while v3 keeps it all. A schema that still does not
// convert is replaced by a plain object for its kind, and the rest of the
// document is served.
func TestV2DocumentCarriesSchemasV2CannotExpress(t *testing.T) {
	widget := crdResource(t, "Widget", widgetSchema)
	open := crdResource(t, "Open", `{"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"spec": {"type": "string"}}}`)
	// patternProperties is no v2, and no CRD can have it (its validation
	// refuses it): it stands for whatever else a schema may carry that
	// the conversion does not foresee.
	bad := crdResource(t, "Bad", `{"type": "object", "properties": {"spec": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}}}}`)
	oa, err := openapi.New(openapi.Options{Version: "v1.37.2", Resources: append(servedResources(), widget, open, bad)})
	if err != nil {
		t.Fatal(err)
	}
	// The request's logger says which definition was skipped.
	var logged []string
	var mu sync.Mutex
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		oa.ServeHTTP(w, r.WithContext(klog.NewContext(r.Context(), logger)))
	}))
	defer srv.Close()

	r := get(t, srv, "/openapi/v2", nil)
	if r.code != 200 {
		t.Fatalf("GET /openapi/v2: %d %s", r.code, r.body)
	}
	var sw spec.Swagger
	if err := json.Unmarshal(r.body, &sw); err != nil {
		t.Fatal(err)
	}
	def := func(name string) spec.Schema { return sw.Definitions[name] }
	wspec := def(widget.DefinitionName).Properties["spec"]
	tests := []struct {
		name string
		ok   bool
	}{
		{"anyOf dropped, int-or-string kept", wspec.Properties["size"].AnyOf == nil && wspec.Properties["size"].Extensions["x-kubernetes-int-or-string"] == true},
		{"oneOf dropped, type kept", wspec.Properties["mode"].OneOf == nil && wspec.Properties["mode"].Type.Contains("string")},
		{"allOf and not dropped", wspec.Properties["both"].AllOf == nil && wspec.Properties["both"].Not == nil},
		{"nullable dropped with its type, and no longer required", !wspec.Properties["note"].Nullable && wspec.Properties["note"].Type == nil &&
			strings.Join(wspec.Required, ",") == "size"},
		{"additionalProperties of strings kept", wspec.Properties["labels"].AdditionalProperties != nil && wspec.Properties["labels"].AdditionalProperties.Schema.Type.Contains("string")},
		{"additionalProperties of int-or-string kept without anyOf", wspec.Properties["limits"].AdditionalProperties != nil &&
			wspec.Properties["limits"].AdditionalProperties.Schema.AnyOf == nil},
		{"additionalProperties of objects kept", wspec.Properties["ports"].AdditionalProperties.Schema.Properties["port"].Format == "int32"},
		{"preserved unknown fields lose their properties and object type", wspec.Properties["raw"].Properties == nil && wspec.Properties["raw"].Type == nil},
		{"array items converted", wspec.Properties["list"].Items.Schema.Properties["value"].AnyOf == nil && wspec.Properties["list"].Items.Schema.Properties["name"].Type.Contains("string")},
		{"the kind keeps its GVK", def(widget.DefinitionName).Extensions["x-kubernetes-group-version-kind"] != nil},
		{"a preserving root is a plain object", def(open.DefinitionName).Properties == nil && def(open.DefinitionName).Type.Contains("object") &&
			def(open.DefinitionName).Extensions["x-kubernetes-group-version-kind"] != nil},
		{"a schema that does not convert is a plain object", def(bad.DefinitionName).Properties == nil && def(bad.DefinitionName).Type.Contains("object") &&
			def(bad.DefinitionName).Extensions["x-kubernetes-group-version-kind"] != nil},
		{"built-in kinds are there", len(def("io.k8s.api.core.v1.Pod").Properties) > 0},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("%s: no", tt.name)
		}
	}
	if t.Failed() {
		b, _ := json.MarshalIndent(def(widget.DefinitionName), "", " ")
		t.Logf("v2 Widget: %s", b)
	}

	r = get(t, srv, "/openapi/v2", map[string]string{"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
	if r.code != 200 {
		t.Fatalf("GET /openapi/v2 as protobuf: %d %s", r.code, r.body)
	}
	var doc openapi_v2.Document
	if err := proto.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		found[d.GetName()] = true
	}
	for _, name := range []string{widget.DefinitionName, open.DefinitionName, bad.DefinitionName, "io.k8s.api.core.v1.Pod"} {
		if !found[name] {
			t.Errorf("protobuf v2 document lacks %s", name)
		}
	}

	mu.Lock()
	if len(logged) != 1 || !strings.Contains(logged[0], bad.DefinitionName) || !strings.Contains(logged[0], "patternProperties") {
		t.Errorf("logged %q, want one line naming %s and why", logged, bad.DefinitionName)
	}
	mu.Unlock()

	// v3 keeps what v2 drops.
	v3 := oa.V3(widget.GVK.GroupVersion()).Components.Schemas[widget.DefinitionName].Properties["spec"]
	if v3.Properties["size"].AnyOf == nil || !v3.Properties["note"].Nullable {
		t.Errorf("v3 lost anyOf or nullable: %+v", v3.Properties["size"])
	}
}
