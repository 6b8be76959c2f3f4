package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"
)

// Upstream's descriptions of the properties every kind has (TypeMeta's
// and PartialObjectMetadata's swagger docs), which its CRD OpenAPI
// builder gives a custom resource's apiVersion, kind and metadata.
const (
	apiVersionDoc = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
	kindDoc       = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
	metadataDoc   = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

// openAPIDefinitions returns the v2 document's and the group version's v3
// document's definition named name, once both have it.
func openAPIDefinitions(t *testing.T, ctx context.Context, group, name string) (v2, v3 spec.Schema) {
	t.Helper()
	rc := clientset(t).Discovery().RESTClient()
	var last error
	for ctx.Err() == nil {
		last = func() error {
			raw, err := rc.Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(ctx)
			if err != nil {
				return err
			}
			var doc spec.Swagger
			if err := json.Unmarshal(raw, &doc); err != nil {
				return fmt.Errorf("v2 document: %w", err)
			}
			s, ok := doc.Definitions[name]
			if !ok {
				return fmt.Errorf("v2 document has no %s", name)
			}
			v2 = s
			raw, err = rc.Get().AbsPath("/openapi/v3/apis/"+group+"/v1").SetHeader("Accept", "application/json").DoRaw(ctx)
			if err != nil {
				return err
			}
			var doc3 spec3.OpenAPI
			if err := json.Unmarshal(raw, &doc3); err != nil {
				return fmt.Errorf("v3 document: %w", err)
			}
			s3, ok := doc3.Components.Schemas[name]
			if !ok {
				return fmt.Errorf("v3 document has no %s", name)
			}
			v3 = *s3
			return nil
		}()
		if last == nil {
			return v2, v3
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("definition %s not published: %v", name, last)
	return
}

// schemaJSON is s as the documents write it, for comparison and messages.
func schemaJSON(t *testing.T, s spec.Schema) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCustomResourceOpenAPIAsUpstreamBuilds checks a custom resource's
// definitions against what upstream's CRD OpenAPI builder publishes (the
// conformance tests CustomResourcePublishOpenAPI "works for CRD with
// validation schema" and "without validation schema", whose CRD's schema
// is an object preserving unknown fields): apiVersion, kind and metadata
// described as for every kind, metadata a reference to ObjectMeta
// (wrapped in allOf in v3, where a reference has no siblings). The v2
// form of a root that preserves unknown fields (a bare object) is the v2
// conversion's, tested with it.
func TestCustomResourceOpenAPIAsUpstreamBuilds(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	str := func(doc string) spec.Schema { return *spec.StringProperty().WithDescription(doc) }
	v2Props := map[string]spec.Schema{
		"apiVersion": str(apiVersionDoc),
		"kind":       str(kindDoc),
		"metadata":   *spec.RefSchema("#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").WithDescription(metadataDoc),
	}
	v3Props := map[string]spec.Schema{
		"apiVersion": str(apiVersionDoc),
		"kind":       str(kindDoc),
		"metadata":   {SchemaProps: spec.SchemaProps{Description: metadataDoc, AllOf: []spec.Schema{*spec.RefSchema("#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")}}},
	}
	preserveRoot := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}, Properties: v3Props}}
	preserveRoot.AddExtension("x-kubernetes-preserve-unknown-fields", true)
	for _, tc := range []struct {
		name  string
		group string
		// schema replaces crontabs' when set.
		schema *apiextensionsv1.JSONSchemaProps
		// wantV2 and wantV3 are the properties expected; wantV3Def the
		// whole v3 definition (without its group-version-kind) when set.
		wantV2, wantV3 map[string]spec.Schema
		wantV3Def      *spec.Schema
		explain        []string
	}{{
		name:   "a schema's apiVersion, kind and metadata are described as every kind's",
		group:  "described.openapi.example.com",
		wantV2: v2Props, wantV3: v3Props,
		explain: []string{`apiVersion\s+<string>\s+APIVersion defines`, `kind\s+<string>\s+Kind is a string value`, `metadata\s+<ObjectMeta>\s+Standard object's metadata`},
	}, {
		name:      "a root preserving unknown fields is that object with the described properties in v3",
		group:     "preserving.openapi.example.com",
		schema:    &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)},
		wantV3Def: &preserveRoot,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			crd := crontabs(tc.group)
			if tc.schema != nil {
				crd.Spec.Versions[0].Schema.OpenAPIV3Schema = tc.schema
				crd.Spec.Versions[0].Subresources = nil
			}
			if _, err := createCRD(t, ctx, crd); err != nil {
				t.Fatal(err)
			}
			defer deleteCRD(t, ctx, crd.Name)
			waitCRD(t, ctx, crd.Name, established)
			v2, v3 := openAPIDefinitions(t, ctx, tc.group, util.ToRESTFriendlyName(tc.group+"/v1/CronTab"))
			for doc, c := range map[string]struct {
				def  spec.Schema
				want map[string]spec.Schema
			}{"v2": {v2, tc.wantV2}, "v3": {v3, tc.wantV3}} {
				for prop, want := range c.want {
					if got := c.def.Properties[prop]; !reflect.DeepEqual(got, want) {
						t.Errorf("%s: %s is %s, want %s as upstream", doc, prop, schemaJSON(t, got), schemaJSON(t, want))
					}
				}
			}
			if tc.wantV3Def != nil {
				delete(v3.Extensions, "x-kubernetes-group-version-kind")
				if got, want := schemaJSON(t, v3), schemaJSON(t, *tc.wantV3Def); got != want {
					t.Errorf("v3: definition %s, want %s as upstream", got, want)
				}
			}
			if len(tc.explain) > 0 {
				out := kubectl(t, "explain", "crontabs."+tc.group)
				for _, pattern := range tc.explain {
					if !regexp.MustCompile(pattern).MatchString(out) {
						t.Errorf("kubectl explain does not match %q:\n%s", pattern, out)
					}
				}
			}
		})
	}
}
