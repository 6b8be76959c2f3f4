package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"github.com/munnerz/goautoneg"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/openapiconv"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Options configure a Service.
type Options struct {
	// Resources are what the apiserver serves. At least one is required.
	Resources []Resource
	// Version goes into the documents' info.version, e.g. "v1.37.2";
	// "unversioned" when empty (the field is required).
	Version string
}

// Service holds the OpenAPI documents built from Options and serves them.
// It is immutable after New and safe for concurrent use.
type Service struct {
	v2          *spec.Swagger
	v2JSON      []byte
	v2Proto     []byte
	v2ETag      string
	built       time.Time
	v3          map[string]*spec3.OpenAPI // by discovery key, e.g. "api/v1"
	v3Handler   *handler3.OpenAPIService
	definitions map[string]*spec.Schema // v3 component schemas of every served group version
}

// New builds the v2 document and one v3 document per group version.
func New(opts Options) (*Service, error) {
	if len(opts.Resources) == 0 {
		return nil, fmt.Errorf("openapi: no resources to describe")
	}
	if opts.Version == "" {
		opts.Version = "unversioned"
	}
	d := newDefinitions()
	byGV := map[schema.GroupVersion]*pathBuilder{}
	for _, r := range opts.Resources {
		if err := r.validate(); err != nil {
			return nil, err
		}
		gv := r.GVK.GroupVersion()
		if byGV[gv] == nil {
			byGV[gv] = &pathBuilder{d: d, paths: map[string]spec.PathItem{}}
		}
		byGV[gv].add(r)
	}
	gvkExtensions(d, opts.Resources)

	all := map[string]spec.PathItem{}
	for _, b := range byGV {
		maps.Copy(all, b.paths)
	}
	v2 := swagger(opts.Version, all, d.defs)
	v2JSON, err := json.Marshal(v2)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding v2 document: %w", err)
	}
	doc, err := openapi_v2.ParseDocument(v2JSON)
	if err != nil {
		return nil, fmt.Errorf("openapi: v2 document to protobuf: %w", err)
	}
	v2Proto, err := proto.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding v2 protobuf: %w", err)
	}

	s := &Service{
		v2: v2, v2JSON: v2JSON, v2Proto: v2Proto,
		v2ETag:      strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(v2JSON))),
		built:       time.Now(),
		v3:          map[string]*spec3.OpenAPI{},
		v3Handler:   handler3.NewOpenAPIService(),
		definitions: map[string]*spec.Schema{},
	}
	for gv, b := range byGV {
		v3 := openapiconv.ConvertV2ToV3(swagger(opts.Version, b.paths, reachable(b.paths, d.defs)))
		for n, types := range d.oneOf {
			if sc, ok := v3.Components.Schemas[n]; ok {
				sc.Type = nil
				for _, t := range types {
					sc.OneOf = append(sc.OneOf, spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{t}}})
				}
			}
		}
		maps.Copy(s.definitions, v3.Components.Schemas)
		s.v3[v3Key(gv)] = v3
		s.v3Handler.UpdateGroupVersion(v3Key(gv), v3)
	}
	return s, nil
}

func swagger(version string, paths map[string]spec.PathItem, defs spec.Definitions) *spec.Swagger {
	return &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: version}},
		Paths:       &spec.Paths{Paths: paths},
		Definitions: defs,
		SecurityDefinitions: spec.SecurityDefinitions{"BearerToken": &spec.SecurityScheme{SecuritySchemeProps: spec.SecuritySchemeProps{
			Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication",
		}}},
		Security: []map[string][]string{{"BearerToken": {}}},
	}}
}

// gvkExtensions marks each served kind's definition (and its list's, and
// meta/v1's Status and DeleteOptions) with x-kubernetes-group-version-kind,
// which kubectl uses to find a kind's schema.
func gvkExtensions(d *definitions, rs []Resource) {
	mark := func(obj runtime.Object, gvk schema.GroupVersionKind) {
		n := d.define(typeOf(obj))
		sc := d.defs[n]
		entry := map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
		var list []any
		if cur, ok := sc.Extensions["x-kubernetes-group-version-kind"].([]any); ok {
			list = cur
		}
		for _, e := range list {
			if reflect.DeepEqual(e, entry) {
				return
			}
		}
		sc.AddExtension("x-kubernetes-group-version-kind", append(list, entry))
		d.defs[n] = sc
	}
	for _, r := range rs {
		mark(r.Object, r.GVK)
		if r.List != nil {
			mark(r.List, r.GVK.GroupVersion().WithKind(r.GVK.Kind+"List"))
		}
		for _, sub := range r.Subresources {
			if sub.Object != nil && !sub.GVK.Empty() {
				mark(sub.Object, sub.GVK)
			}
		}
	}
	mark(&metav1.Status{}, metav1.Unversioned.WithKind("Status"))
	mark(&metav1.DeleteOptions{}, metav1.Unversioned.WithKind("DeleteOptions"))
}

func typeOf(obj any) reflect.Type {
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// reachable returns the definitions the paths refer to, directly or not,
// so each v3 document carries only what its group version needs.
func reachable(paths map[string]spec.PathItem, defs spec.Definitions) spec.Definitions {
	out := spec.Definitions{}
	var visit func(s *spec.Schema)
	visit = func(s *spec.Schema) {
		if s == nil {
			return
		}
		if ref := s.Ref.String(); ref != "" {
			n := strings.TrimPrefix(ref, "#/definitions/")
			if _, seen := out[n]; !seen {
				if def, ok := defs[n]; ok {
					out[n] = def
					visit(&def)
				}
			}
		}
		for _, p := range s.Properties {
			visit(&p)
		}
		if s.Items != nil {
			visit(s.Items.Schema)
		}
		if s.AdditionalProperties != nil {
			visit(s.AdditionalProperties.Schema)
		}
		for i := range s.AllOf {
			visit(&s.AllOf[i])
		}
	}
	for _, item := range paths {
		for _, o := range []*spec.Operation{item.Get, item.Put, item.Post, item.Delete, item.Patch} {
			if o == nil {
				continue
			}
			for _, p := range o.Parameters {
				visit(p.Schema)
			}
			for _, r := range o.Responses.StatusCodeResponses {
				visit(r.Schema)
			}
		}
	}
	// Status and DeleteOptions carry GVK extensions clients look up even
	// when no path of this group version names them.
	for n, def := range defs {
		if _, ok := def.Extensions["x-kubernetes-group-version-kind"]; ok && strings.HasPrefix(n, "io.k8s.apimachinery.pkg.apis.meta.v1.") {
			if _, seen := out[n]; !seen {
				out[n] = def
				visit(&def)
			}
		}
	}
	return out
}

// V2 returns the OpenAPI v2 document. Callers must not modify it.
func (s *Service) V2() *spec.Swagger { return s.v2 }

// V3 returns the v3 document of a group version, or nil. Callers must not
// modify it.
func (s *Service) V3(gv schema.GroupVersion) *spec3.OpenAPI { return s.v3[v3Key(gv)] }

// Definitions returns the v3 component schemas of every served kind, keyed
// by definition name: what a server-side apply type converter
// (k8s.io/apimachinery/pkg/util/managedfields.NewTypeConverter) or a
// field validator takes. Callers must not modify them.
func (s *Service) Definitions() map[string]*spec.Schema { return s.definitions }

// Media types of the v2 protobuf document; kubectl asks for the first.
const (
	protoV2Deprecated = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
	protoV2           = "com.github.proto-openapi.spec.v2.v1.0+protobuf"
)

// ServeHTTP serves /openapi/v2 (JSON or protobuf, by Accept), the
// /openapi/v3 discovery document and /openapi/v3/<group version>
// documents (JSON or protobuf, cacheable forever when asked by ?hash=).
// Other paths are 404.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case p == "/openapi/v2":
		s.serveV2(w, r)
	case p == "/openapi/v3":
		s.v3Handler.HandleDiscovery(w, r)
	case strings.HasPrefix(p, "/openapi/v3/"):
		if _, ok := s.v3[strings.TrimPrefix(p, "/openapi/v3/")]; !ok {
			http.NotFound(w, r)
			return
		}
		s.v3Handler.HandleGroupVersion(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Service) serveV2(w http.ResponseWriter, r *http.Request) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	w.Header().Add("Vary", "Accept")
	for _, c := range goautoneg.ParseAccept(accept) {
		if c.Type != "application" && c.Type != "*" {
			continue
		}
		var body []byte
		var ct string
		switch c.SubType {
		case "json", "*":
			body, ct = s.v2JSON, "application/json"
		case protoV2, protoV2Deprecated:
			body, ct = s.v2Proto, "application/"+protoV2
		default:
			continue
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Etag", s.v2ETag)
		http.ServeContent(w, r, "", s.built, bytes.NewReader(body))
		return
	}
	w.WriteHeader(http.StatusNotAcceptable)
}
