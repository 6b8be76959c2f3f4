package resourceset

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/kite-project/kite/apiserver/openapi"
)

// scaleDefinition is the OpenAPI name of the body of every scale
// subresource.
const scaleDefinition = "io.k8s.api.autoscaling.v1.Scale"

// EnableScaleApply gives the field managers the schema of autoscaling/v1
// Scale, which client-go's compiled-in schema (where the built-in kinds'
// come from) lacks, taken from the OpenAPI document Kite serves for apps/v1
// (its deployments/scale refers to it; one document is built, not all):
// writes of /scale then keep managed fields as upstream's (the Scale's
// writer owns the parent's replicas) and /scale takes server-side apply.
func (r *Set) EnableScaleApply(oa *openapi.Service) error {
	var defs map[string]*spec.Schema
	if doc := oa.V3(appsv1.SchemeGroupVersion); doc != nil && doc.Components != nil {
		defs = doc.Components.Schemas
	}
	needed := definitionClosure(defs, scaleDefinition)
	if needed[scaleDefinition] == nil {
		return fmt.Errorf("openapi: no definition %s for server-side apply of scale", scaleDefinition)
	}
	tc, err := managedfields.NewTypeConverter(needed, false)
	if err != nil {
		return fmt.Errorf("server-side apply schema of %s: %w", scaleDefinition, err)
	}
	r.build.fields.SetTyped(tc, autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
	return nil
}

// definitionClosure returns the definition named root and every one it
// refers to, directly or not.
func definitionClosure(defs map[string]*spec.Schema, root string) map[string]*spec.Schema {
	out := map[string]*spec.Schema{}
	var visit func(s *spec.Schema)
	add := func(name string) {
		if _, seen := out[name]; seen {
			return
		}
		if d := defs[name]; d != nil {
			out[name] = d
			visit(d)
		}
	}
	visit = func(s *spec.Schema) {
		if s == nil {
			return
		}
		if ref := s.Ref.String(); ref != "" {
			add(ref[strings.LastIndex(ref, "/")+1:])
		}
		for _, p := range s.Properties {
			visit(&p)
		}
		if s.Items != nil {
			visit(s.Items.Schema)
			for i := range s.Items.Schemas {
				visit(&s.Items.Schemas[i])
			}
		}
		if s.AdditionalProperties != nil {
			visit(s.AdditionalProperties.Schema)
		}
		for _, group := range [][]spec.Schema{s.AllOf, s.OneOf, s.AnyOf} {
			for i := range group {
				visit(&group[i])
			}
		}
	}
	add(root)
	return out
}
