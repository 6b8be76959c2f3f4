package resourceset

import (
	"maps"
	"slices"

	"github.com/kite-project/kite/apiserver/openapi"
	"github.com/kite-project/kite/registry"
)

// Describe describes strat's resource to the OpenAPI documents, with the
// verbs routing and discovery use: the one description of a Strategy, for
// built-in and custom resources alike (a custom resource's adds its
// schema). As upstream, a subresource whose storage makes objects of its
// own (scale: autoscaling/v1 Scale, binding: v1 Binding) is described as
// that kind, any other (status) as its parent's; subresources come in
// name order, so that the documents do not depend on map order.
func Describe(strat *registry.Strategy) openapi.Resource {
	r := openapi.Resource{GVK: strat.Kind, Plural: strat.Resource, Namespaced: strat.Namespaced, Verbs: strat.Verbs(), Object: strat.New()}
	if strat.Virtual == nil && strat.CreateVia == "" {
		r.List = strat.NewList()
	}
	for _, name := range slices.Sorted(maps.Keys(strat.Subresources)) {
		sub := strat.Subresources[name]
		os := openapi.Subresource{Name: name, Verbs: sub.Verbs()}
		if sub.New != nil {
			os.Object, os.GVK = sub.New(), sub.Kind
		}
		r.Subresources = append(r.Subresources, os)
	}
	return r
}
