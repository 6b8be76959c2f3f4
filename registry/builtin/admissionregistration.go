package builtin

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/apis/admissionregistration/defaults"
	"github.com/kite-project/kite/apis/admissionregistration/validation"
	"github.com/kite-project/kite/registry"
)

// admissionRegistrationStrategies returns the six resources of
// admissionregistration.k8s.io/v1 that kube-apiserver 1.37 serves by
// default: the webhook configurations, and the validating and mutating
// admission policies with their bindings. They share one Validator, whose
// CEL compiler checks their expressions. Admission reads them from these
// stores (registry/admission/webhook); they are never themselves subject
// to webhooks or policies.
func admissionRegistrationStrategies() []*registry.Strategy {
	v := validation.New()
	gv := admissionregistrationv1.SchemeGroupVersion
	type (
		vwc  = admissionregistrationv1.ValidatingWebhookConfiguration
		mwc  = admissionregistrationv1.MutatingWebhookConfiguration
		vap  = admissionregistrationv1.ValidatingAdmissionPolicy
		vapb = admissionregistrationv1.ValidatingAdmissionPolicyBinding
		map_ = admissionregistrationv1.MutatingAdmissionPolicy
		mapb = admissionregistrationv1.MutatingAdmissionPolicyBinding
	)
	return []*registry.Strategy{
		{
			Kind: gv.WithKind("MutatingWebhookConfiguration"), Resource: "mutatingwebhookconfigurations", SingularName: "mutatingwebhookconfiguration",
			Categories: []string{"api-extensions"},
			New:        func() runtime.Object { return &mwc{} }, NewList: func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} },
			Default:          func(obj runtime.Object) { defaults.MutatingWebhookConfiguration(obj.(*mwc)) },
			PrepareForCreate: func(obj runtime.Object) { obj.(*mwc).Generation = 1 },
			PrepareForUpdate: func(obj, old runtime.Object) {
				bumpGeneration(obj.(*mwc), old.(*mwc), obj.(*mwc).Webhooks, old.(*mwc).Webhooks)
			},
			ValidatesMetadata: true,
			Validate:          func(obj runtime.Object) field.ErrorList { return v.ValidateMutatingWebhookConfiguration(obj.(*mwc)) },
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return v.ValidateMutatingWebhookConfigurationUpdate(obj.(*mwc), old.(*mwc))
			},
			AllowUnconditionalUpdate: true,
		},
		{
			Kind: gv.WithKind("ValidatingWebhookConfiguration"), Resource: "validatingwebhookconfigurations", SingularName: "validatingwebhookconfiguration",
			Categories: []string{"api-extensions"},
			New:        func() runtime.Object { return &vwc{} }, NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} },
			Default:          func(obj runtime.Object) { defaults.ValidatingWebhookConfiguration(obj.(*vwc)) },
			PrepareForCreate: func(obj runtime.Object) { obj.(*vwc).Generation = 1 },
			PrepareForUpdate: func(obj, old runtime.Object) {
				bumpGeneration(obj.(*vwc), old.(*vwc), obj.(*vwc).Webhooks, old.(*vwc).Webhooks)
			},
			ValidatesMetadata: true,
			Validate:          func(obj runtime.Object) field.ErrorList { return v.ValidateValidatingWebhookConfiguration(obj.(*vwc)) },
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return v.ValidateValidatingWebhookConfigurationUpdate(obj.(*vwc), old.(*vwc))
			},
			AllowUnconditionalUpdate: true,
		},
		{
			Kind: gv.WithKind("ValidatingAdmissionPolicy"), Resource: "validatingadmissionpolicies", SingularName: "validatingadmissionpolicy",
			Categories: []string{"api-extensions"},
			New:        func() runtime.Object { return &vap{} }, NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
			Default: func(obj runtime.Object) { defaults.ValidatingAdmissionPolicy(obj.(*vap)) },
			PrepareForCreate: func(obj runtime.Object) {
				p := obj.(*vap)
				p.Generation, p.Status = 1, admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
			},
			PrepareForUpdate: func(obj, old runtime.Object) {
				p, o := obj.(*vap), old.(*vap)
				p.Status = o.Status
				bumpGeneration(p, o, p.Spec, o.Spec)
			},
			ValidatesMetadata: true,
			Validate:          func(obj runtime.Object) field.ErrorList { return v.ValidateValidatingAdmissionPolicy(obj.(*vap)) },
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return v.ValidateValidatingAdmissionPolicyUpdate(obj.(*vap), old.(*vap))
			},
			AllowUnconditionalUpdate: true,
			Subresources: map[string]*registry.Subresource{"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					p, o := obj.(*vap), old.(*vap)
					p.Spec, p.Labels, p.Annotations, p.Finalizers, p.OwnerReferences = o.Spec, o.Labels, o.Annotations, o.Finalizers, o.OwnerReferences
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return validation.ValidateValidatingAdmissionPolicyStatusUpdate(obj.(*vap), old.(*vap))
				},
			}},
		},
		{
			Kind: gv.WithKind("ValidatingAdmissionPolicyBinding"), Resource: "validatingadmissionpolicybindings", SingularName: "validatingadmissionpolicybinding",
			Categories: []string{"api-extensions"},
			New:        func() runtime.Object { return &vapb{} }, NewList: func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} },
			Default:          func(obj runtime.Object) { defaults.ValidatingAdmissionPolicyBinding(obj.(*vapb)) },
			PrepareForCreate: func(obj runtime.Object) { obj.(*vapb).Generation = 1 },
			PrepareForUpdate: func(obj, old runtime.Object) {
				bumpGeneration(obj.(*vapb), old.(*vapb), obj.(*vapb).Spec, old.(*vapb).Spec)
			},
			ValidatesMetadata: true,
			Validate: func(obj runtime.Object) field.ErrorList {
				return validation.ValidateValidatingAdmissionPolicyBinding(obj.(*vapb))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validation.ValidateValidatingAdmissionPolicyBindingUpdate(obj.(*vapb), old.(*vapb))
			},
			AllowUnconditionalUpdate: true,
		},
		{
			Kind: gv.WithKind("MutatingAdmissionPolicy"), Resource: "mutatingadmissionpolicies", SingularName: "mutatingadmissionpolicy",
			Categories: []string{"api-extensions"},
			New:        func() runtime.Object { return &map_{} }, NewList: func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} },
			Default:          func(obj runtime.Object) { defaults.MutatingAdmissionPolicy(obj.(*map_)) },
			PrepareForCreate: func(obj runtime.Object) { obj.(*map_).Generation = 1 },
			PrepareForUpdate: func(obj, old runtime.Object) {
				bumpGeneration(obj.(*map_), old.(*map_), obj.(*map_).Spec, old.(*map_).Spec)
			},
			ValidatesMetadata: true,
			Validate:          func(obj runtime.Object) field.ErrorList { return v.ValidateMutatingAdmissionPolicy(obj.(*map_)) },
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return v.ValidateMutatingAdmissionPolicyUpdate(obj.(*map_), old.(*map_))
			},
			AllowUnconditionalUpdate: true,
		},
		{
			Kind: gv.WithKind("MutatingAdmissionPolicyBinding"), Resource: "mutatingadmissionpolicybindings", SingularName: "mutatingadmissionpolicybinding",
			Categories: []string{"api-extensions"},
			New:        func() runtime.Object { return &mapb{} }, NewList: func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} },
			Default:          func(obj runtime.Object) { defaults.MutatingAdmissionPolicyBinding(obj.(*mapb)) },
			PrepareForCreate: func(obj runtime.Object) { obj.(*mapb).Generation = 1 },
			PrepareForUpdate: func(obj, old runtime.Object) {
				bumpGeneration(obj.(*mapb), old.(*mapb), obj.(*mapb).Spec, old.(*mapb).Spec)
			},
			ValidatesMetadata: true,
			Validate: func(obj runtime.Object) field.ErrorList {
				return validation.ValidateMutatingAdmissionPolicyBinding(obj.(*mapb))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validation.ValidateMutatingAdmissionPolicyBindingUpdate(obj.(*mapb), old.(*mapb))
			},
			AllowUnconditionalUpdate: true,
		},
	}
}

// generational is an object with metadata.generation.
type generational interface {
	GetGeneration() int64
	SetGeneration(int64)
}

// bumpGeneration is upstream's: the generation moves when what the
// object asks for (spec, or webhooks) changes.
func bumpGeneration(obj, old generational, spec, oldSpec any) {
	obj.SetGeneration(old.GetGeneration())
	if !apiequality.Semantic.DeepEqual(spec, oldSpec) {
		obj.SetGeneration(old.GetGeneration() + 1)
	}
}
