package validation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// TestValidatePodDisruptionBudget checks upstream's field paths and
// messages.
func TestValidatePodDisruptionBudget(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tests := []struct {
		name string
		spec policyv1.PodDisruptionBudgetSpec
		want []string
	}{
		{"minAvailable number", policyv1.PodDisruptionBudgetSpec{Selector: sel, MinAvailable: ptr.To(intstr.FromInt32(2))}, nil},
		{"maxUnavailable percent", policyv1.PodDisruptionBudgetSpec{Selector: sel, MaxUnavailable: ptr.To(intstr.FromString("50%"))}, nil},
		{"no selector is valid (matches nothing)", policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))}, nil},
		{"negative minAvailable", policyv1.PodDisruptionBudgetSpec{Selector: sel, MinAvailable: ptr.To(intstr.FromInt32(-1))},
			[]string{"spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"}},
		{"percent over 100", policyv1.PodDisruptionBudgetSpec{Selector: sel, MaxUnavailable: ptr.To(intstr.FromString("150%"))},
			[]string{`spec.maxUnavailable: Invalid value: "150%": must not be greater than 100%`}},
		{"not a percent", policyv1.PodDisruptionBudgetSpec{Selector: sel, MinAvailable: ptr.To(intstr.FromString("half"))},
			[]string{`spec.minAvailable: Invalid value: "half": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')`}},
		{"unknown eviction policy", policyv1.PodDisruptionBudgetSpec{Selector: sel, UnhealthyPodEvictionPolicy: ptr.To(policyv1.UnhealthyPodEvictionPolicyType("Never"))},
			[]string{`spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget"`}},
		{"bad selector operator", policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}},
			[]string{`spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := errorStrings(ValidatePodDisruptionBudget(&policyv1.PodDisruptionBudget{Spec: tc.spec}, false))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	both := errorStrings(ValidatePodDisruptionBudget(&policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}, false))
	if len(both) != 1 || !strings.HasPrefix(both[0], "spec: Invalid value:") || !strings.HasSuffix(both[0], "minAvailable and maxUnavailable cannot be both set") {
		t.Errorf("both set: %v, want one spec error", both)
	}
}

func TestValidatePodDisruptionBudgetStatusUpdate(t *testing.T) {
	status := &policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: -1, ExpectedPods: -2}
	got := errorStrings(ValidatePodDisruptionBudgetStatusUpdate(status, &policyv1.PodDisruptionBudgetStatus{}, field.NewPath("status")))
	want := []string{
		"status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0",
		"status.expectedPods: Invalid value: -2: must be greater than or equal to 0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
