package apiserver_test

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// admissionRegistrationSample returns a valid object of one of the
// admissionregistration.k8s.io kinds, or nil. Its rules name a group no
// test writes (samples.example.com), so that the webhooks and policies
// the fixture creates intercept nothing.
func admissionRegistrationSample(kind schema.GroupVersionKind, meta metav1.ObjectMeta) runtime.Object {
	if kind.Group != admissionregistrationv1.GroupName {
		return nil
	}
	meta.Namespace = ""
	rule := admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"samples.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}}}
	client := admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/admit")}
	none := ptr.To(admissionregistrationv1.SideEffectClassNone)
	constraints := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: rule}}}
	switch kind.Kind {
	case "ValidatingWebhookConfiguration":
		return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "check.samples.example.com", ClientConfig: client, Rules: []admissionregistrationv1.RuleWithOperations{rule}, SideEffects: none, AdmissionReviewVersions: []string{"v1"}}}}
	case "MutatingWebhookConfiguration":
		return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: meta, Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "mutate.samples.example.com", ClientConfig: client, Rules: []admissionregistrationv1.RuleWithOperations{rule}, SideEffects: none, AdmissionReviewVersions: []string{"v1"}}}}
	case "ValidatingAdmissionPolicy":
		return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: meta, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: constraints, Validations: []admissionregistrationv1.Validation{{Expression: "true"}}}}
	case "ValidatingAdmissionPolicyBinding":
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: meta, Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "web", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	case "MutatingAdmissionPolicy":
		return &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: meta, Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: constraints, ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "[]"}}}}}
	case "MutatingAdmissionPolicyBinding":
		return &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: meta, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "web"}}
	}
	return nil
}
