package openapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"github.com/munnerz/goautoneg"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/cached"
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
// SetGroupVersion replaces one group version's part while serving; the
// v2 document, which covers every group version, is re-encoded on the
// next request for it. It is safe for concurrent use.
type Service struct {
	version   string
	v3Handler *handler3.OpenAPIService

	// mu guards d and byGV, and orders updates.
	mu   sync.Mutex
	d    *definitions
	byGV map[schema.GroupVersion]*gvDoc

	// docs is what is served now: swapped whole on each update.
	docs atomic.Pointer[documents]
}

// gvDoc is one group version's part: its resources and paths.
type gvDoc struct {
	resources []Resource
	paths     map[string]spec.PathItem
	v3        func() *spec3.OpenAPI
}

// documents is one generation of the served documents, encoded lazily.
type documents struct {
	// v2 builds and encodes the v2 document on first use: the protobuf
	// form costs a YAML parse of the whole document (most of New's time
	// otherwise), and kubectl asks for v2 only when v3 does not answer.
	v2 func() *v2Document
	// v2Reported is set once the definitions v2 skipped are logged.
	v2Reported  atomic.Bool
	built       time.Time
	v3          map[string]func() *spec3.OpenAPI // by discovery key, e.g. "api/v1"
	definitions func() map[string]*spec.Schema   // v3 component schemas of every served group version
}

// New builds the documents' schemas and paths. Encoding them (v2 JSON and
// protobuf, v3 conversion) waits for the first request, to keep it off the
// server's start-up.
func New(opts Options) (*Service, error) {
	if len(opts.Resources) == 0 {
		return nil, fmt.Errorf("openapi: no resources to describe")
	}
	if opts.Version == "" {
		opts.Version = "unversioned"
	}
	s := &Service{
		version:   opts.Version,
		v3Handler: handler3.NewOpenAPIService(),
		d:         newDefinitions(),
		byGV:      map[schema.GroupVersion]*gvDoc{},
	}
	byGV := map[schema.GroupVersion][]Resource{}
	var order []schema.GroupVersion
	for _, r := range opts.Resources {
		if err := r.validate(); err != nil {
			return nil, err
		}
		gv := r.GVK.GroupVersion()
		if byGV[gv] == nil {
			order = append(order, gv)
		}
		byGV[gv] = append(byGV[gv], r)
	}
	changes := make([]gvResources, len(order))
	for i, gv := range order {
		changes[i] = gvResources{gv, byGV[gv]}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setLocked(changes)
	return s, nil
}

// gvResources is what one group version is to describe.
type gvResources struct {
	gv        schema.GroupVersion
	resources []Resource
}

// SetGroupVersion replaces what the documents say of group version gv
// with resources (all of that group version); none removes gv. Only gv's
// paths and v3 document are rebuilt.
func (s *Service) SetGroupVersion(gv schema.GroupVersion, resources []Resource) error {
	return s.SetGroupVersions(map[schema.GroupVersion][]Resource{gv: resources})
}

// SetGroupVersions is SetGroupVersion for several group versions at once,
// with the documents rebuilt once: CRDs installed together cost one
// rebuild, not one each.
func (s *Service) SetGroupVersions(changes map[schema.GroupVersion][]Resource) error {
	ordered := make([]gvResources, 0, len(changes))
	for _, gv := range slices.SortedFunc(maps.Keys(changes), func(a, b schema.GroupVersion) int { return strings.Compare(a.String(), b.String()) }) {
		for _, r := range changes[gv] {
			if err := r.validate(); err != nil {
				return err
			}
			if r.GVK.GroupVersion() != gv {
				return fmt.Errorf("openapi: resource %s is not of group version %s", r.Plural, gv)
			}
		}
		ordered = append(ordered, gvResources{gv, changes[gv]})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setLocked(ordered)
	return nil
}

// setLocked replaces the changed group versions' parts and publishes the
// result. The definitions are copied once for all of them (the copy is
// what the lazy v3 conversions and the v2 document read; later updates
// add to s.d).
func (s *Service) setLocked(changes []gvResources) {
	built := make([]*pathBuilder, len(changes))
	for i, c := range changes {
		if old := s.byGV[c.gv]; old != nil {
			// Definitions of schema-described resources belong to their
			// group version alone: a CRD's schema goes with it.
			for _, r := range old.resources {
				if r.Schema != nil {
					delete(s.d.defs, r.DefinitionName)
					delete(s.d.defs, r.DefinitionName+"List")
				}
			}
		}
		if len(c.resources) == 0 {
			delete(s.byGV, c.gv)
			s.v3Handler.DeleteGroupVersion(v3Key(c.gv))
			continue
		}
		b := &pathBuilder{d: s.d, paths: map[string]spec.PathItem{}}
		for _, r := range c.resources {
			b.add(r)
		}
		gvkExtensions(s.d, c.resources)
		built[i] = b
	}
	d := s.d.snapshot()
	version := s.version
	etag := strconv.FormatInt(time.Now().UnixNano(), 36)
	for i, c := range changes {
		b := built[i]
		if b == nil {
			continue
		}
		doc := sync.OnceValue(func() *spec3.OpenAPI { return toV3(version, b.paths, d) })
		s.byGV[c.gv] = &gvDoc{resources: c.resources, paths: b.paths, v3: doc}
		s.v3Handler.UpdateGroupVersionLazy(v3Key(c.gv), cached.Func(func() (*spec3.OpenAPI, string, error) {
			return doc(), etag, nil // unchanged until the next SetGroupVersion of gv
		}))
	}
	s.publishLocked(d)
}

// publishLocked makes the current group versions the served generation;
// d is a copy of the current definitions.
func (s *Service) publishLocked(d *definitions) {
	all := map[string]spec.PathItem{}
	v3 := map[string]func() *spec3.OpenAPI{}
	for gv, doc := range s.byGV {
		maps.Copy(all, doc.paths)
		v3[v3Key(gv)] = doc.v3
	}
	var schemaDefs []string
	for _, doc := range s.byGV {
		for _, r := range doc.resources {
			if r.Schema != nil {
				schemaDefs = append(schemaDefs, r.DefinitionName)
			}
		}
	}
	version := s.version
	docs := &documents{
		v2:    sync.OnceValue(func() *v2Document { return buildV2(version, all, d.defs, schemaDefs) }),
		built: time.Now(),
		v3:    v3,
	}
	docs.definitions = sync.OnceValue(func() map[string]*spec.Schema {
		out := map[string]*spec.Schema{}
		for _, doc := range v3 {
			maps.Copy(out, doc().Components.Schemas)
		}
		return out
	})
	s.docs.Store(docs)
}

type encodedV2 struct {
	json, proto []byte
	etag        string
}

// v2Document is the v2 document of one generation, as served.
type v2Document struct {
	swagger *spec.Swagger
	enc     *encodedV2
	err     error
	// skipped says why each custom resource definition that v2 could not
	// carry, even converted, is described as a plain object instead.
	skipped []error
}

// buildV2 builds and encodes the v2 document: the custom resources'
// definitions (schemaDefs) converted to what v2 can express, as upstream's
// v2 builder does. Should one still not encode, it is described as a
// plain object of its kind and the rest is served: one schema never fails
// the whole document, which kubectl reads for every kind that v3 does not
// describe.
func buildV2(version string, paths map[string]spec.PathItem, defs spec.Definitions, schemaDefs []string) *v2Document {
	v2defs := v2Definitions(defs, schemaDefs)
	sw := swagger(version, paths, v2defs)
	enc, err := encodeV2(sw)
	if err == nil {
		return &v2Document{swagger: sw, enc: enc}
	}
	// The whole document is parsed once when all is well; each custom
	// resource's definition is parsed alone only to find the bad ones.
	var skipped []error
	for _, n := range schemaDefs {
		if def, ok := v2defs[n]; ok {
			if cerr := checkV2Definition(n, def); cerr != nil {
				v2defs[n] = plainObject(def)
				skipped = append(skipped, cerr)
			}
		}
	}
	if len(skipped) > 0 {
		enc, err = encodeV2(sw)
	}
	return &v2Document{swagger: sw, enc: enc, err: err, skipped: skipped}
}

func encodeV2(v2 *spec.Swagger) (*encodedV2, error) {
	j, err := json.Marshal(v2)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding v2 document: %w", err)
	}
	doc, err := openapi_v2.ParseDocument(j)
	if err != nil {
		return nil, fmt.Errorf("openapi: v2 document to protobuf: %w", err)
	}
	p, err := proto.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encoding v2 protobuf: %w", err)
	}
	return &encodedV2{json: j, proto: p, etag: strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(j)))}, nil
}

// toV3 is one group version's v3 document: its paths and the definitions
// they reach, converted, with oneOf for the types v2 calls strings.
func toV3(version string, paths map[string]spec.PathItem, d *definitions) *spec3.OpenAPI {
	v3 := openapiconv.ConvertV2ToV3(swagger(version, paths, reachable(paths, d.defs)))
	for n, types := range d.oneOf {
		if sc, ok := v3.Components.Schemas[n]; ok {
			sc.Type = nil
			for _, t := range types {
				sc.OneOf = append(sc.OneOf, spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{t}}})
			}
		}
	}
	return v3
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
		markName(d, d.define(typeOf(obj)), gvk)
	}
	for _, r := range rs {
		if r.Schema != nil {
			markName(d, r.DefinitionName, r.GVK)
			markName(d, r.DefinitionName+"List", r.GVK.GroupVersion().WithKind(r.GVK.Kind+"List"))
		} else {
			mark(r.Object, r.GVK)
			if r.List != nil {
				mark(r.List, r.GVK.GroupVersion().WithKind(r.GVK.Kind+"List"))
			}
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

// markName adds gvk to definition n's x-kubernetes-group-version-kind.
func markName(d *definitions, n string, gvk schema.GroupVersionKind) {
	{
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
		// A fresh map: snapshots taken before share the old one.
		sc.Extensions = maps.Clone(sc.Extensions)
		sc.AddExtension("x-kubernetes-group-version-kind", append(slices.Clip(list), entry))
		d.defs[n] = sc
	}
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

// V2 returns the OpenAPI v2 document as served. Callers must not modify
// it.
func (s *Service) V2() *spec.Swagger { return s.docs.Load().v2().swagger }

// V3 returns the v3 document of a group version, or nil. Callers must not
// modify it.
func (s *Service) V3(gv schema.GroupVersion) *spec3.OpenAPI {
	if doc, ok := s.docs.Load().v3[v3Key(gv)]; ok {
		return doc()
	}
	return nil
}

// Definitions returns the v3 component schemas of every served kind, keyed
// by definition name: what a server-side apply type converter
// (k8s.io/apimachinery/pkg/util/managedfields.NewTypeConverter) or a
// field validator takes. Callers must not modify them.
func (s *Service) Definitions() map[string]*spec.Schema { return s.docs.Load().definitions() }

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
		if _, ok := s.docs.Load().v3[strings.TrimPrefix(p, "/openapi/v3/")]; !ok {
			http.NotFound(w, r)
			return
		}
		s.v3Handler.HandleGroupVersion(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Service) serveV2(w http.ResponseWriter, r *http.Request) {
	docs := s.docs.Load()
	v2 := docs.v2()
	if len(v2.skipped) > 0 && docs.v2Reported.CompareAndSwap(false, true) {
		for _, err := range v2.skipped {
			klog.FromContext(r.Context()).Error(err, "OpenAPI v2 describes a custom resource as a plain object: its schema does not convert")
		}
	}
	enc, err := v2.enc, v2.err
	if err != nil {
		// Reached only if a built-in type cannot be encoded; New's
		// callers test their resources through this path.
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
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
			body, ct = enc.json, "application/json"
		case protoV2, protoV2Deprecated:
			body, ct = enc.proto, "application/"+protoV2
		default:
			continue
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Etag", enc.etag)
		http.ServeContent(w, r, "", docs.built, bytes.NewReader(body))
		return
	}
	w.WriteHeader(http.StatusNotAcceptable)
}
