package main

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kite-project/kite/apiserver/openapi"
)

// The generic apiserver needs OpenAPI definitions of what it serves: it
// builds the server-side-apply type converter (managedFields) from them.
// kube-apiserver's are generated into k8s.io/kubernetes, which is not a
// library, so these are derived from the Go types by reflection: struct
// fields by their json tags, types that name their own OpenAPI type
// (Time, Quantity, IntOrString) as that type; the types pods and
// namespaces reach come from Kite's definitions instead (see
// getDefinitions).

// openAPISchemaTyper is what apimachinery types implement to name their
// OpenAPI type.
type openAPISchemaTyper interface{ OpenAPISchemaType() []string }

type openAPIFormatter interface{ OpenAPISchemaFormat() string }

// definitions derives OpenAPI definitions from Go types.
type definitions struct {
	ref  common.ReferenceCallback
	defs map[string]common.OpenAPIDefinition
}

// getDefinitions returns the definitions of roots and of every named struct
// type they reach. Where Kite's OpenAPI document has a definition (every
// type pods and namespaces reach), it is taken from there: Kite's carry
// upstream's list markers (x-kubernetes-list-type, -list-map-keys), so
// managedFields come out as kube-apiserver's (containers keyed by name,
// ports by containerPort and protocol); without them every list was
// atomic and the reference's managedFields were a third of upstream's
// size, which flattered it in every figure.
func getDefinitions(roots ...any) (common.GetOpenAPIDefinitions, error) {
	kite, err := openapi.New(openapi.Options{Resources: []openapi.Resource{
		{GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Plural: "pods", Namespaced: true, Verbs: []string{"get", "list"}, Object: &corev1.Pod{}, List: &corev1.PodList{}},
		{GVK: corev1.SchemeGroupVersion.WithKind("Namespace"), Plural: "namespaces", Verbs: []string{"get", "list"}, Object: &corev1.Namespace{}, List: &corev1.NamespaceList{}},
	}})
	if err != nil {
		return nil, fmt.Errorf("Kite's OpenAPI definitions: %w", err)
	}
	marked := kite.Definitions()
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		d := &definitions{ref: ref, defs: map[string]common.OpenAPIDefinition{}}
		for _, r := range roots {
			d.define(reflect.TypeOf(r).Elem())
		}
		for name, s := range marked {
			def := common.OpenAPIDefinition{Schema: *s}
			for dep := range refs(s) {
				def.Dependencies = append(def.Dependencies, dep)
			}
			d.defs[name] = def
		}
		return d.defs
	}, nil
}

// refs returns the names of the definitions s refers to.
func refs(s *spec.Schema) map[string]bool {
	out := map[string]bool{}
	var walk func(s *spec.Schema)
	walk = func(s *spec.Schema) {
		if s == nil {
			return
		}
		if u := s.Ref.String(); u != "" {
			out[u[strings.LastIndex(u, "/")+1:]] = true
		}
		for _, p := range s.Properties {
			walk(&p)
		}
		if s.Items != nil {
			walk(s.Items.Schema)
			for i := range s.Items.Schemas {
				walk(&s.Items.Schemas[i])
			}
		}
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Schema)
		}
		for i := range s.AllOf {
			walk(&s.AllOf[i])
		}
	}
	walk(s)
	return out
}

// typeName is the name the OpenAPI builder looks a type up by: the
// OpenAPIModelName of k8s.io/api types, else the Go path.
func typeName(t reflect.Type) string { return util.GetCanonicalTypeName(reflect.New(t).Interface()) }

// define adds the definition of the named struct t and returns its name.
func (d *definitions) define(t reflect.Type) string {
	name := typeName(t)
	if _, ok := d.defs[name]; ok {
		return name
	}
	d.defs[name] = common.OpenAPIDefinition{} // placeholder: types may refer to themselves
	deps := map[string]bool{}
	s := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{}}}
	d.fields(t, &s, deps)
	def := common.OpenAPIDefinition{Schema: s}
	for dep := range deps {
		def.Dependencies = append(def.Dependencies, dep)
	}
	d.defs[name] = def
	return name
}

// fields adds the json fields of struct t to s, inlining embedded ones.
func (d *definitions) fields(t reflect.Type, s *spec.Schema, deps map[string]bool) {
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if (f.Anonymous && name == "") || strings.Contains(opts, "inline") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				d.fields(ft, s, deps)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		s.Properties[name] = d.schemaOf(f.Type, deps)
	}
}

// schemaOf is the schema of a field of type t.
func (d *definitions) schemaOf(t reflect.Type, deps map[string]bool) spec.Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if typer, ok := reflect.New(t).Elem().Interface().(openAPISchemaTyper); ok {
		s := spec.Schema{SchemaProps: spec.SchemaProps{Type: typer.OpenAPISchemaType()}}
		if f, ok := typer.(openAPIFormatter); ok {
			s.Format = f.OpenAPISchemaFormat()
		}
		return s
	}
	primitive := func(typ, format string) spec.Schema {
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{typ}, Format: format}}
	}
	switch t.Kind() {
	case reflect.Bool:
		return primitive("boolean", "")
	case reflect.Int32, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Int8, reflect.Uint8:
		return primitive("integer", "int32")
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64:
		return primitive("integer", "int64")
	case reflect.Float32, reflect.Float64:
		return primitive("number", "double")
	case reflect.String:
		return primitive("string", "")
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return primitive("string", "byte")
		}
		item := d.schemaOf(t.Elem(), deps)
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: &item}}}
	case reflect.Map:
		value := d.schemaOf(t.Elem(), deps)
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &value}}}
	case reflect.Struct:
		if t.Name() == "" {
			s := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{}}}
			d.fields(t, &s, deps)
			return s
		}
		name := d.define(t)
		deps[name] = true
		return spec.Schema{SchemaProps: spec.SchemaProps{Ref: d.ref(name)}}
	}
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}
}
