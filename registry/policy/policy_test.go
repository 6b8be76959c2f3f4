package policy

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	celtypes "github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/utils/ptr"
)

func TestDenialPicksUpstreamsMessageAndReason(t *testing.T) {
	str := func(s string) *plugincel.EvaluationResult {
		return &plugincel.EvaluationResult{EvalResult: celtypes.String(s)}
	}
	for _, tc := range []struct {
		name       string
		val        admissionregistrationv1.Validation
		msg        *plugincel.EvaluationResult
		wantMsg    string
		wantReason metav1.StatusReason
	}{
		{"messageExpression wins", admissionregistrationv1.Validation{Expression: "false", Message: "static"}, str(" dynamic "), "dynamic", metav1.StatusReasonInvalid},
		{"message without messageExpression", admissionregistrationv1.Validation{Expression: "false", Message: " static "}, nil, "static", metav1.StatusReasonInvalid},
		{"a multi-line messageExpression falls back", admissionregistrationv1.Validation{Expression: "false", Message: "static"}, str("a\nb"), "static", metav1.StatusReasonInvalid},
		{"an overlong messageExpression falls back", admissionregistrationv1.Validation{Expression: "false", Message: "static"}, str(strings.Repeat("x", 5*1024+1)), "static", metav1.StatusReasonInvalid},
		{"an empty messageExpression falls back", admissionregistrationv1.Validation{Expression: "false", Message: "static"}, str("  "), "static", metav1.StatusReasonInvalid},
		{"no message names the expression", admissionregistrationv1.Validation{Expression: " 1 > 2 "}, nil, "failed expression: 1 > 2", metav1.StatusReasonInvalid},
		{"the validation's reason", admissionregistrationv1.Validation{Expression: "false", Reason: ptr.To(metav1.StatusReasonForbidden)}, nil, "failed expression: false", metav1.StatusReasonForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := denial(tc.val, tc.msg)
			if !d.deny || d.message != tc.wantMsg || d.reason != tc.wantReason {
				t.Errorf("denial = %+v, want message %q reason %q", d, tc.wantMsg, tc.wantReason)
			}
		})
	}
}

func TestReasonToCodeIsUpstreams(t *testing.T) {
	for reason, code := range map[metav1.StatusReason]int32{
		metav1.StatusReasonForbidden: http.StatusForbidden, metav1.StatusReasonUnauthorized: http.StatusUnauthorized,
		metav1.StatusReasonRequestEntityTooLarge: http.StatusRequestEntityTooLarge, metav1.StatusReasonInvalid: http.StatusUnprocessableEntity,
		"Other": http.StatusUnprocessableEntity,
	} {
		if got := reasonToCode(reason); got != code {
			t.Errorf("reasonToCode(%s) = %d, want %d", reason, got, code)
		}
	}
}

func TestBindPairsPoliciesWithTheirBindingsInNameOrder(t *testing.T) {
	type p struct{ name string }
	type b struct{ name, policy string }
	got := bind([]p{{"z"}, {"a"}, {"unbound"}}, []b{{"b2", "a"}, {"b1", "a"}, {"bz", "z"}, {"orphan", "missing"}},
		func(x p) string { return x.name }, func(x b) string { return x.policy }, func(x b) string { return x.name })
	var flat []string
	for _, h := range got {
		for _, x := range h.bindings {
			flat = append(flat, h.policy.name+"/"+x.name)
		}
	}
	if want := []string{"a/b1", "a/b2", "z/bz"}; !slices.Equal(flat, want) {
		t.Errorf("bind = %v, want %v", flat, want)
	}
}

func TestExemptResources(t *testing.T) {
	for _, tc := range []struct {
		group, resource string
		want            bool
	}{
		{"admissionregistration.k8s.io", "validatingadmissionpolicies", true},
		{"admissionregistration.k8s.io", "mutatingadmissionpolicybindings", true},
		// Webhook configurations are subject to policies, as upstream.
		{"admissionregistration.k8s.io", "validatingwebhookconfigurations", false},
		{"authorization.k8s.io", "subjectaccessreviews", true},
		{"authentication.k8s.io", "tokenreviews", true},
		{"", "configmaps", false},
	} {
		gvr := schema.GroupVersionResource{Group: tc.group, Version: "v1", Resource: tc.resource}
		a := admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{}, "", "n", gvr, "", admission.Create, nil, false, nil)
		if got := exempt(a); got != tc.want {
			t.Errorf("exempt(%s.%s) = %v, want %v", tc.resource, tc.group, got, tc.want)
		}
	}
}

func TestMatchRulesHonoursResourceNames(t *testing.T) {
	rule := admissionregistrationv1.NamedRuleWithOperations{ResourceNames: []string{"only"}, RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	p := New(Options{})
	for name, want := range map[string]bool{"only": true, "other": false} {
		a := admission.NewAttributesRecord(&corev1.ConfigMap{}, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "ns", name, corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, nil, false, nil)
		ok, _, err := p.matchRules(a, []admissionregistrationv1.NamedRuleWithOperations{rule}, ptr.To(admissionregistrationv1.Equivalent))
		if err != nil || ok != want {
			t.Errorf("matchRules(%s) = %v, %v; want %v", name, ok, err, want)
		}
	}
}
