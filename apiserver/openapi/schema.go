package openapi

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Interfaces k8s.io/apimachinery types implement to describe themselves
// to kube-openapi's generator; Kite reads the same methods at run time.
type (
	swaggerDocer    interface{ SwaggerDoc() map[string]string }
	schemaTyper     interface{ OpenAPISchemaType() []string }
	schemaFormatter interface{ OpenAPISchemaFormat() string }
	v3OneOfTyper    interface{ OpenAPIV3OneOfTypes() []string }
)

// definitions builds OpenAPI v2 definitions from Go types by reflection.
// It is not safe for concurrent use; New uses one per build.
type definitions struct {
	defs spec.Definitions
	// oneOf records, by definition name, the v3 oneOf types of types like
	// IntOrString and Quantity (v2 cannot say "integer or string").
	oneOf map[string][]string
	// names maps a Go type to its definition name, so two types never
	// share a name silently.
	names map[reflect.Type]string
}

func newDefinitions() *definitions {
	return &definitions{defs: spec.Definitions{}, oneOf: map[string][]string{}, names: map[reflect.Type]string{}}
}

// snapshot returns a copy of d that later definitions do not change (the
// schemas themselves are shared: they are never modified once defined,
// only replaced).
func (d *definitions) snapshot() *definitions {
	return &definitions{defs: maps.Clone(d.defs), oneOf: maps.Clone(d.oneOf), names: d.names}
}

// defineSchema defines a resource described by a schema rather than a Go
// type (a custom resource) as name, and its list as name+"List"; it
// returns references to both. The schema is the object's whole
// definition: its describer decides on apiVersion, kind and metadata (a
// CRD version without a schema has none, as upstream), which may refer to
// ObjectMeta, defined here so that the reference resolves.
func (d *definitions) defineSchema(name string, s spec.Schema) (obj, list spec.Schema) {
	d.define(reflect.TypeFor[metav1.ObjectMeta]())
	d.defs[name] = s
	typeMeta := metav1.TypeMeta{}.SwaggerDoc()
	listMeta := d.schemaOf(reflect.TypeFor[metav1.ListMeta]())
	listMeta.Description = metav1.PartialObjectMetadataList{}.SwaggerDoc()["metadata"]
	l := spec.Schema{SchemaProps: spec.SchemaProps{
		Type:     spec.StringOrArray{"object"},
		Required: []string{"items"},
		Properties: map[string]spec.Schema{
			"apiVersion": *spec.StringProperty().WithDescription(typeMeta["apiVersion"]),
			"kind":       *spec.StringProperty().WithDescription(typeMeta["kind"]),
			"metadata":   listMeta,
			"items":      {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"array"}, Items: &spec.SchemaOrArray{Schema: ptrTo(refTo(name))}}},
		},
	}}
	d.defs[name+"List"] = l
	return refTo(name), refTo(name + "List")
}

func ptrTo[T any](v T) *T { return &v }

// name is the OpenAPI name of a named Go type: its OpenAPIModelName when
// it has one (k8s.io/api types do: "io.k8s.api.core.v1.Pod"), else the
// REST-friendly form of its package path and name.
func name(t reflect.Type) string {
	v := reflect.New(t).Elem().Interface()
	if m, ok := v.(util.OpenAPIModelNamer); ok {
		return m.OpenAPIModelName()
	}
	return util.ToRESTFriendlyName(util.GetCanonicalTypeName(v))
}

func refTo(name string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef("#/definitions/" + name)}}
}

// schemaOf returns the schema for a value of type t: a $ref for named
// structs and self-describing types (defining them on first use), an
// inline schema for everything else.
func (d *definitions) schemaOf(t reflect.Type) spec.Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	v := reflect.New(t).Elem().Interface()
	if _, ok := v.(schemaTyper); ok && t.PkgPath() != "" {
		return refTo(d.define(t))
	}
	switch t.Kind() {
	case reflect.Struct:
		if t.PkgPath() == "" { // anonymous struct: inline
			s := d.structSchema(t)
			return s
		}
		return refTo(d.define(t))
	case reflect.String:
		return primitive("string", "")
	case reflect.Bool:
		return primitive("boolean", "")
	case reflect.Int32, reflect.Int16, reflect.Int8, reflect.Uint16, reflect.Uint8:
		return primitive("integer", "int32")
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return primitive("integer", "int64")
	case reflect.Float32, reflect.Float64:
		return primitive("number", "double")
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return primitive("string", "byte") // encoding/json writes []byte as base64
		}
		items := d.schemaOf(t.Elem())
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"array"}, Items: &spec.SchemaOrArray{Schema: &items}}}
	case reflect.Map:
		val := d.schemaOf(t.Elem())
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}, AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &val}}}
	default: // interfaces (runtime.Object inside RawExtension is json:"-") and the rest
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
	}
}

func primitive(typ, format string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{typ}, Format: format}}
}

// define adds t's definition if missing and returns its name.
func (d *definitions) define(t reflect.Type) string {
	if n, ok := d.names[t]; ok {
		return n
	}
	n := name(t)
	d.names[t] = n
	d.defs[n] = spec.Schema{} // placeholder: breaks cycles (JSONSchemaProps-like recursion)
	v := reflect.New(t).Elem().Interface()
	var s spec.Schema
	if st, ok := v.(schemaTyper); ok {
		s.Type = spec.StringOrArray(st.OpenAPISchemaType())
		if f, ok := v.(schemaFormatter); ok {
			s.Format = f.OpenAPISchemaFormat()
		}
		if o, ok := v.(v3OneOfTyper); ok {
			d.oneOf[n] = o.OpenAPIV3OneOfTypes()
		}
	} else {
		s = d.structSchema(t)
	}
	if doc, ok := v.(swaggerDocer); ok {
		s.Description = doc.SwaggerDoc()[""]
	}
	d.defs[n] = s
	return n
}

// structSchema lists a struct's JSON fields as properties, flattening
// inline and embedded structs as encoding/json does.
func (d *definitions) structSchema(t reflect.Type) spec.Schema {
	s := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
	typeName := ""
	if t.PkgPath() != "" {
		typeName = name(t)
	}
	var docs map[string]string
	if doc, ok := reflect.New(t).Elem().Interface().(swaggerDocer); ok {
		docs = doc.SwaggerDoc()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		jsonName, opts, _ := strings.Cut(tag, ",")
		omit := strings.Contains(","+opts+",", ",omitempty,")
		inline := strings.Contains(","+opts+",", ",inline,") || (f.Anonymous && jsonName == "")
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				inner := d.structSchema(ft)
				if s.Properties == nil && len(inner.Properties) > 0 {
					s.Properties = map[string]spec.Schema{}
				}
				for k, v := range inner.Properties {
					s.Properties[k] = v
				}
				s.Required = append(s.Required, inner.Required...)
				continue
			}
		}
		if jsonName == "" {
			jsonName = f.Name
		}
		prop := d.schemaOf(f.Type)
		prop.Description = docs[jsonName]
		if ps := f.Tag.Get("patchStrategy"); ps != "" {
			prop.AddExtension("x-kubernetes-patch-strategy", ps)
		}
		if pk := f.Tag.Get("patchMergeKey"); pk != "" {
			prop.AddExtension("x-kubernetes-patch-merge-key", pk)
		}
		m, known := fieldMarkers[typeName+"."+jsonName]
		if known {
			if m.listType != "" {
				prop.AddExtension("x-kubernetes-list-type", m.listType)
			}
			if len(m.listMapKeys) > 0 {
				prop.AddExtension("x-kubernetes-list-map-keys", m.listMapKeys)
			}
			if m.mapType != "" {
				prop.AddExtension("x-kubernetes-map-type", m.mapType)
			}
		}
		if s.Properties == nil {
			s.Properties = map[string]spec.Schema{}
		}
		s.Properties[jsonName] = prop
		// Required as openapi-gen decides: +required, or neither
		// omitempty nor +optional.
		if (known && m.required) || (!omit && !(known && m.optional)) {
			s.Required = append(s.Required, jsonName)
		}
	}
	slices.Sort(s.Required)
	return s
}
