package openapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// v2Definitions returns defs with the schema-described definitions named
// in schemaDefs (custom resources, whose schemas are written for OpenAPI
// v3) converted to what v2 can express: defs itself is shared with the v3
// documents, which keep everything.
func v2Definitions(defs spec.Definitions, schemaDefs []string) spec.Definitions {
	out := maps.Clone(defs)
	for _, n := range schemaDefs {
		if def, ok := defs[n]; ok {
			out[n] = v2Root(def)
		}
	}
	return out
}

// v2Root converts a custom resource's definition as upstream's v2 builder
// does: one that preserves unknown fields at its root is a plain object
// (kubectl would refuse every field it does not list), any other is
// converted by v2Schema.
func v2Root(def spec.Schema) spec.Schema {
	if preservesUnknownFields(def) {
		return plainObject(def)
	}
	return v2Schema(def)
}

// plainObject is an object schema that says nothing of its fields, with
// def's extensions (its group-version-kind, by which clients find it).
func plainObject(def spec.Schema) spec.Schema {
	out := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
	if gvk, ok := def.Extensions["x-kubernetes-group-version-kind"]; ok {
		out.AddExtension("x-kubernetes-group-version-kind", gvk)
	}
	return out
}

func preservesUnknownFields(s spec.Schema) bool {
	v, _ := s.Extensions.GetBool("x-kubernetes-preserve-unknown-fields")
	return v
}

// v2Schema is upstream's ToStructuralOpenAPIV2 (apiextensions-apiserver
// controller/openapi/v2) on a kube-openapi schema, returning a converted
// copy: it drops the junctors v2 lacks (allOf, oneOf, anyOf, not); a
// nullable value loses its type, items and properties (kubectl breaks on
// an untyped value with them) and is no longer required; a value that
// preserves unknown fields loses its items and properties, and its object
// type; an array left without items loses its type. Everything else
// (types, formats, enums, patterns, additionalProperties schemas, the
// x-kubernetes extensions) is kept.
func v2Schema(s spec.Schema) spec.Schema {
	s.AllOf, s.OneOf, s.AnyOf, s.Not = nil, nil, nil, nil
	preserve := preservesUnknownFields(s)
	if s.Nullable {
		s.Type, s.Nullable = nil, false
		s.Items, s.Properties = nil, nil
	}
	if preserve {
		s.Items, s.Properties = nil, nil
	}
	if s.Items == nil && s.Type.Contains("array") {
		s.Type = nil
	}
	if preserve && s.Type.Contains("object") {
		s.Type = nil
	}
	if s.Properties != nil {
		props := make(map[string]spec.Schema, len(s.Properties))
		for name, p := range s.Properties {
			if p.Nullable {
				s.Required = slices.DeleteFunc(slices.Clone(s.Required), func(r string) bool { return r == name })
			}
			props[name] = v2Schema(p)
		}
		s.Properties = props
	}
	if s.Items != nil {
		items := &spec.SchemaOrArray{}
		if s.Items.Schema != nil {
			items.Schema = ptrTo(v2Schema(*s.Items.Schema))
		}
		for _, item := range s.Items.Schemas {
			items.Schemas = append(items.Schemas, v2Schema(item))
		}
		s.Items = items
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
		if ap.Schema.Nullable {
			s.Required = nil
		}
		s.AdditionalProperties = &spec.SchemaOrBool{Allows: ap.Allows, Schema: ptrTo(v2Schema(*ap.Schema))}
	}
	if len(s.Required) == 0 {
		s.Required = nil
	}
	return s
}

// checkV2Definition reports whether the v2 protobuf form can carry def, by
// parsing a document holding it alone as the whole document is parsed.
func checkV2Definition(name string, def spec.Schema) error {
	doc, err := json.Marshal(map[string]any{
		"swagger":     "2.0",
		"info":        map[string]string{"title": "check", "version": "check"},
		"paths":       map[string]any{},
		"definitions": map[string]spec.Schema{name: def},
	})
	if err != nil {
		return fmt.Errorf("encode definition %s: %w", name, err)
	}
	if _, err := openapi_v2.ParseDocument(doc); err != nil {
		return fmt.Errorf("definition %s: %w", name, err)
	}
	return nil
}
