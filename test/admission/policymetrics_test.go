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

// TestMutatingAdmissionPolicyMetrics: the mutations a create runs are
// counted in /metrics as upstream's mutating dispatcher counts them, in
// apiserver_mutating_admission_policy_check_total and
// ..._check_duration_seconds with upstream's labels (policy,
// policy_binding, error_type): once per mutation run, "no_error" when it
// applied and upstream's error type when it failed (a runtime error is
// "invalid_error"); a policy whose matchConditions leave the object out
// runs no mutation and is not counted.
func TestMutatingAdmissionPolicyMetrics(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := policyNamespace(t, client, nil)
	install := func(suffix string, conds []admissionregistrationv1.MatchCondition, mutations ...admissionregistrationv1.Mutation) string {
		name := ns + "-" + suffix
		installMutatingPolicy(t, client, &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregistrationv1.Ignore), MatchConstraints: configMapsIn(client, t, ns),
				MatchConditions: conds, Mutations: mutations}},
			&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-binding"},
				Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name}})
		return name
	}
	applied := install("applied", nil,
		applyConfiguration(`Object{metadata: Object.metadata{labels: {"mutated": "yes"}}}`),
		jsonPatch(`[JSONPatch{op: "add", path: "/data/added", value: "yes"}]`))
	failing := install("failing", nil, jsonPatch(`[JSONPatch{op: "add", path: "/data/x", value: object.data.missing}]`))
	skipped := install("skipped", []admissionregistrationv1.MatchCondition{{Name: "never", Expression: "false"}},
		applyConfiguration(`Object{metadata: Object.metadata{labels: {"skipped": "no"}}}`))

	cm, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subject"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if cm.Labels["mutated"] != "yes" || cm.Data["added"] != "yes" {
		t.Fatalf("created %v %v, want both mutations of %s applied", cm.Labels, cm.Data, applied)
	}
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("get /metrics: %v", err)
	}
	text := string(raw)
	for _, tc := range []struct {
		policy, errorType string
		count             int // 0: no series
	}{
		{applied, "no_error", 2},
		{failing, "invalid_error", 1},
		{failing, "no_error", 0},
		{skipped, "no_error", 0},
	} {
		labels := fmt.Sprintf(`{error_type=%q,policy=%q,policy_binding=%q}`, tc.errorType, tc.policy, tc.policy+"-binding")
		for _, series := range []string{"apiserver_mutating_admission_policy_check_total", "apiserver_mutating_admission_policy_check_duration_seconds_count"} {
			prefix := series + labels + " "
			i := strings.Index(text, prefix)
			switch {
			case tc.count == 0 && i >= 0:
				t.Errorf("/metrics has %s, want none", strings.SplitN(text[i:], "\n", 2)[0])
			case tc.count > 0 && !strings.Contains(text, prefix+fmt.Sprint(tc.count)+"\n"):
				t.Errorf("/metrics lacks %s%d", prefix, tc.count)
			}
		}
	}
	if !strings.Contains(text, "# TYPE apiserver_mutating_admission_policy_check_duration_seconds histogram") {
		t.Error("/metrics has no mutating check_duration_seconds histogram")
	}
}
