package apiextensions

import (
	"fmt"
	"maps"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// applySchema returns the structured-merge schema of
// CustomResourceDefinitions, which client-go's compiled-in schema lacks:
// apiextensions-apiserver's generated OpenAPI definitions, the model
// upstream's apiextensions server builds its field managers from (list
// types and map types included: spec.versions is atomic). With it, CRD
// writes keep managed fields and CRDs take server-side apply.
func applySchema() (managedfields.TypeConverter, error) {
	all := generatedopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef("#/definitions/" + name)
	})
	defs := make(map[string]*spec.Schema, len(all))
	for name, def := range all {
		s := def.Schema
		defs[name] = &s
	}
	// The converter finds a kind's schema by this extension, which
	// upstream's OpenAPI builder adds to each served kind.
	for kind, model := range map[string]string{
		"CustomResourceDefinition":     apiextensionsv1.CustomResourceDefinition{}.OpenAPIModelName(),
		"CustomResourceDefinitionList": apiextensionsv1.CustomResourceDefinitionList{}.OpenAPIModelName(),
	} {
		gvk := apiextensionsv1.SchemeGroupVersion.WithKind(kind)
		def := defs[model]
		if def == nil {
			return nil, fmt.Errorf("apiextensions: no OpenAPI definition %s", model)
		}
		withGVK := *def
		withGVK.Extensions = maps.Clone(def.Extensions)
		if withGVK.Extensions == nil {
			withGVK.Extensions = spec.Extensions{}
		}
		withGVK.Extensions["x-kubernetes-group-version-kind"] = []any{map[string]any{
			"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind,
		}}
		defs[model] = &withGVK
	}
	tc, err := managedfields.NewTypeConverter(defs, false)
	if err != nil {
		return nil, fmt.Errorf("apiextensions: server-side apply schema of CustomResourceDefinitions: %w", err)
	}
	return tc, nil
}
