package admission_test

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

const admissionRegistrationManifest = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: reg-vwc}
webhooks:
- name: check.reg.example.com
  clientConfig: {url: "https://127.0.0.1:1/validate"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  sideEffects: None
  admissionReviewVersions: [v1]
  objectSelector: {matchLabels: {reg-test: never}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: reg-mwc}
webhooks:
- name: mutate.reg.example.com
  clientConfig:
    service: {namespace: default, name: nowhere}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
  sideEffects: None
  admissionReviewVersions: [v1]
  objectSelector: {matchLabels: {reg-test: never}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: reg-vap}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments]}]
  validations: [{expression: "object.spec.replicas <= 5"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: reg-vapb}
spec: {policyName: reg-vap, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: reg-map}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments]}]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: "Object{metadata: Object.metadata{labels: {'mutated': 'yes'}}}"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: reg-mapb}
spec: {policyName: reg-map}
`

// TestAdmissionRegistrationKindsAreServed: kubectl applies one object of
// each of the six kinds, they come back defaulted as upstream defaults
// them, and kubectl api-resources lists them.
func TestAdmissionRegistrationKindsAreServed(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ctx := t.Context()
	out, err := kubectl(t, admissionRegistrationManifest, "apply", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectl(t, admissionRegistrationManifest, "delete", "-f", "-") })
	for _, kind := range []string{"validatingwebhookconfiguration.admissionregistration.k8s.io/reg-vwc", "mutatingwebhookconfiguration.admissionregistration.k8s.io/reg-mwc",
		"validatingadmissionpolicy.admissionregistration.k8s.io/reg-vap", "validatingadmissionpolicybinding.admissionregistration.k8s.io/reg-vapb",
		"mutatingadmissionpolicy.admissionregistration.k8s.io/reg-map", "mutatingadmissionpolicybinding.admissionregistration.k8s.io/reg-mapb"} {
		if !strings.Contains(out, kind+" created") {
			t.Errorf("kubectl apply said %q, want %s created", out, kind)
		}
	}
	ar := client.AdmissionregistrationV1()
	vwc, err := ar.ValidatingWebhookConfigurations().Get(ctx, "reg-vwc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := vwc.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent || *w.TimeoutSeconds != 10 ||
		w.NamespaceSelector == nil || *w.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("validating webhook not defaulted as upstream: %+v", w)
	}
	mwc, err := ar.MutatingWebhookConfigurations().Get(ctx, "reg-mwc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := mwc.Webhooks[0]; *m.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy || *m.ClientConfig.Service.Port != 443 {
		t.Errorf("mutating webhook not defaulted as upstream: %+v", m)
	}
	vap, err := ar.ValidatingAdmissionPolicies().Get(ctx, "reg-vap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *vap.Spec.FailurePolicy != admissionregistrationv1.Fail || *vap.Spec.MatchConstraints.MatchPolicy != admissionregistrationv1.Equivalent || vap.Generation != 1 {
		t.Errorf("policy not defaulted as upstream: %+v", vap.Spec)
	}
	// The status is the status subresource's. The policy status
	// controller writes this status too (its type checking), so the
	// update retries on a conflict from the latest object, as any writer
	// beside a controller must.
	var st *admissionregistrationv1.ValidatingAdmissionPolicy
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := ar.ValidatingAdmissionPolicies().Get(ctx, "reg-vap", metav1.GetOptions{})
		if err != nil {
			return err
		}
		latest.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Checked", LastTransitionTime: metav1.Now()}}
		st, err = ar.ValidatingAdmissionPolicies().UpdateStatus(ctx, latest, metav1.UpdateOptions{})
		return err
	})
	if err != nil || len(st.Status.Conditions) != 1 || st.Status.Conditions[0].Reason != "Checked" {
		t.Fatalf("status update: %v", err)
	}
	if out, err := kubectl(t, "", "api-resources", "--api-group=admissionregistration.k8s.io", "-o", "name"); err != nil || strings.Count(out, "\n") != 6 {
		t.Errorf("api-resources: %v\n%s", err, out)
	}
}

// TestWebhookConfigurationWithABadMatchConditionIsRefused: a
// matchCondition that does not compile is upstream's 422 with
// "compilation failed", and nothing is stored.
func TestWebhookConfigurationWithABadMatchConditionIsRefused(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://127.0.0.1:1/x"
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "reg-bad"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{
		Name: "bad.reg.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url}, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "bad", Expression: "object.metadata.name =="}},
	}}}
	_, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), c, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "webhooks[0].matchConditions[0].expression: Invalid value: \"object.metadata.name ==\": compilation failed") {
		t.Fatalf("create: %v, want 422 compilation failed", err)
	}
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), "reg-bad", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get: %v, want NotFound", err)
	}
}
