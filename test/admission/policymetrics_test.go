package admission_test

import (
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestValidatingAdmissionPolicyMetrics: a refused create is counted in
// /metrics as upstream's dispatcher counts it, in
// apiserver_validating_admission_policy_check_total and
// ..._check_duration_seconds with upstream's labels (policy,
// policy_binding, error_type, enforcement_action): a denial once per
// binding action (deny, warn, audit; a false validation is upstream's
// "invalid_error"), and an evaluation error that failurePolicy Ignore
// let through as "allow".
func TestValidatingAdmissionPolicyMetrics(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := policyNamespace(t, client, nil)
	install := func(suffix, expr string, fp admissionregistrationv1.FailurePolicyType, actions ...admissionregistrationv1.ValidationAction) string {
		name := ns + "-" + suffix
		installValidatingPolicy(t, client, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(fp), MatchConstraints: configMapsIn(client, t, ns),
				Validations: []admissionregistrationv1.Validation{{Expression: expr, Message: "no"}}}},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-binding"},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: actions}})
		return name
	}
	deny := install("deny", "false", admissionregistrationv1.Fail, admissionregistrationv1.Deny)
	warnAudit := install("warn", "false", admissionregistrationv1.Fail, admissionregistrationv1.Warn, admissionregistrationv1.Audit)
	ignored := install("ignored", "object.data.missing == 'x'", admissionregistrationv1.Ignore, admissionregistrationv1.Deny)
	passing := install("passing", "true", admissionregistrationv1.Fail, admissionregistrationv1.Deny)

	_, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subject"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("ValidatingAdmissionPolicy '%s'", deny)) {
		t.Fatalf("create: %v, want the denial of %s", err, deny)
	}
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("get /metrics: %v", err)
	}
	text := string(raw)
	for _, tc := range []struct {
		policy, errorType, action string
		want                      bool
	}{
		{deny, "invalid_error", "deny", true},
		{warnAudit, "invalid_error", "warn", true},
		{warnAudit, "invalid_error", "audit", true},
		{ignored, "invalid_error", "allow", true},
		// A validation that passes is not counted, as upstream.
		{passing, "no_error", "allow", false},
	} {
		labels := fmt.Sprintf(`{enforcement_action=%q,error_type=%q,policy=%q,policy_binding=%q}`, tc.action, tc.errorType, tc.policy, tc.policy+"-binding")
		for _, series := range []string{"apiserver_validating_admission_policy_check_total", "apiserver_validating_admission_policy_check_duration_seconds_count"} {
			line := series + labels + " 1\n"
			if got := strings.Contains(text, line); got != tc.want {
				t.Errorf("/metrics has %q: %v, want %v", strings.TrimSpace(line), got, tc.want)
			}
		}
	}
	if !strings.Contains(text, "# TYPE apiserver_validating_admission_policy_check_duration_seconds histogram") {
		t.Error("/metrics has no check_duration_seconds histogram")
	}
}
