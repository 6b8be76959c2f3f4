// Package defaults is upstream's v1 defaulting of admissionregistration.k8s.io
// (pkg/apis/admissionregistration/v1/defaults.go): failure and match
// policies, selectors, timeouts, rule scopes and service ports.
package defaults

import (
	v1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ValidatingWebhookConfiguration defaults each webhook.
func ValidatingWebhookConfiguration(c *v1.ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		webhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
	}
}

// MutatingWebhookConfiguration defaults each webhook; reinvocationPolicy
// is Never.
func MutatingWebhookConfiguration(c *v1.MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		webhook(&w.FailurePolicy, &w.MatchPolicy, &w.NamespaceSelector, &w.ObjectSelector, &w.TimeoutSeconds, w.Rules, &w.ClientConfig)
		if w.ReinvocationPolicy == nil {
			w.ReinvocationPolicy = ptr.To(v1.NeverReinvocationPolicy)
		}
	}
}

func webhook(failure **v1.FailurePolicyType, match **v1.MatchPolicyType, ns, obj **metav1.LabelSelector, timeout **int32, rules []v1.RuleWithOperations, cc *v1.WebhookClientConfig) {
	if *failure == nil {
		*failure = ptr.To(v1.Fail)
	}
	if *match == nil {
		*match = ptr.To(v1.Equivalent)
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *obj == nil {
		*obj = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptr.To[int32](10)
	}
	for i := range rules {
		rule(&rules[i].Rule)
	}
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptr.To[int32](443)
	}
}

func rule(r *v1.Rule) {
	if r.Scope == nil {
		r.Scope = ptr.To(v1.AllScopes)
	}
}

// MatchResources defaults a policy's or binding's match constraints.
func MatchResources(m *v1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptr.To(v1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for i := range m.ResourceRules {
		rule(&m.ResourceRules[i].Rule)
	}
	for i := range m.ExcludeResourceRules {
		rule(&m.ExcludeResourceRules[i].Rule)
	}
}

// ValidatingAdmissionPolicy defaults failurePolicy to Fail and the match
// constraints.
func ValidatingAdmissionPolicy(p *v1.ValidatingAdmissionPolicy) {
	policy(&p.Spec.FailurePolicy, p.Spec.MatchConstraints)
}

func policy(failure **v1.FailurePolicyType, m *v1.MatchResources) {
	if *failure == nil {
		*failure = ptr.To(v1.Fail)
	}
	MatchResources(m)
}

// ValidatingAdmissionPolicyBinding defaults the match resources.
func ValidatingAdmissionPolicyBinding(b *v1.ValidatingAdmissionPolicyBinding) {
	MatchResources(b.Spec.MatchResources)
}

// MutatingAdmissionPolicy defaults failurePolicy to Fail and the match
// constraints.
func MutatingAdmissionPolicy(p *v1.MutatingAdmissionPolicy) {
	policy(&p.Spec.FailurePolicy, p.Spec.MatchConstraints)
}

// MutatingAdmissionPolicyBinding defaults the match resources.
func MutatingAdmissionPolicyBinding(b *v1.MutatingAdmissionPolicyBinding) {
	MatchResources(b.Spec.MatchResources)
}
