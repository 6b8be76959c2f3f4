package resourceset

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kite-project/kite/apiserver/metrics"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/policy"
	"github.com/kite-project/kite/registry/webhook"
)

// admissionPolicies returns the ValidatingAdmissionPolicy and
// MutatingAdmissionPolicy plugins over the set that set returns once it
// is built: policies, bindings, parameters and namespaces come from its
// stores, ApplyConfigurations merge with its field managers' schemas.
func admissionPolicies(set func() *Set, scheme *runtime.Scheme, authz func() authorizer.UnconditionalAuthorizer, m *metrics.Metrics) map[string]registry.AdmissionPlugin {
	var reg prometheus.Registerer
	if m != nil {
		reg = m.Registry()
	}
	p := policy.New(policy.Options{
		Metrics: reg,
		Stores: func(gr string) *registry.Store {
			if s := set(); s != nil {
				return s.Store(gr)
			}
			return nil
		},
		ForKind: func(kind schema.GroupVersionKind) *registry.Store {
			if s := set(); s != nil {
				return s.storeForKind(kind)
			}
			return nil
		},
		Equivalents: func(gvr schema.GroupVersionResource, subresource string) []webhook.Equivalent {
			if s := set(); s != nil {
				return s.Equivalents(gvr, subresource)
			}
			return nil
		},
		TypeConverter: func(kind schema.GroupVersionKind) managedfields.TypeConverter {
			if s := set(); s != nil {
				return s.build.fields.TypeConverter(kind)
			}
			return nil
		},
		Authorizer: authz,
		Scheme:     scheme,
	})
	return map[string]registry.AdmissionPlugin{
		"ValidatingAdmissionPolicy": p.ValidatingPlugin(),
		"MutatingAdmissionPolicy":   p.MutatingPlugin(),
	}
}

// storeForKind returns the served, stored resource whose objects are of
// kind, or nil.
func (r *Set) storeForKind(kind schema.GroupVersionKind) *registry.Store {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.stacks {
		if s := st.Store.Strategy(); s.Virtual == nil && s.Kind == kind {
			return st.Store
		}
	}
	return nil
}
