package validation_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/admissionregistration/defaults"
	"github.com/kite-project/kite/apis/admissionregistration/validation"
)

func validWebhook() v1.ValidatingWebhook {
	return v1.ValidatingWebhook{
		Name:                    "check.example.com",
		ClientConfig:            v1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:8443/validate")},
		Rules:                   []v1.RuleWithOperations{{Operations: []v1.OperationType{v1.Create}, Rule: v1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
		SideEffects:             ptr.To(v1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

// TestValidatingWebhookConfigurationAsUpstream: each case breaks one rule
// of upstream's validation and gets its field path and message.
func TestValidatingWebhookConfigurationAsUpstream(t *testing.T) {
	tests := []struct {
		name   string
		change func(w *v1.ValidatingWebhook)
		want   string // "" = valid
	}{
		{"valid", func(*v1.ValidatingWebhook) {}, ""},
		{"name with two segments", func(w *v1.ValidatingWebhook) { w.Name = "check.example" }, "webhooks[0].name: Invalid value: \"check.example\": should be a domain with at least three segments separated by dots"},
		{"timeout 0", func(w *v1.ValidatingWebhook) { w.TimeoutSeconds = ptr.To[int32](0) }, "webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between 1 and 30 seconds"},
		{"timeout 31", func(w *v1.ValidatingWebhook) { w.TimeoutSeconds = ptr.To[int32](31) }, "the timeout value must be between 1 and 30 seconds"},
		{"timeout 30", func(w *v1.ValidatingWebhook) { w.TimeoutSeconds = ptr.To[int32](30) }, ""},
		{"side effects Some", func(w *v1.ValidatingWebhook) { w.SideEffects = ptr.To(v1.SideEffectClassSome) }, `webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"`},
		{"no side effects", func(w *v1.ValidatingWebhook) { w.SideEffects = nil }, "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"},
		{"failure policy", func(w *v1.ValidatingWebhook) { w.FailurePolicy = ptr.To(v1.FailurePolicyType("Sometimes")) }, `webhooks[0].failurePolicy: Unsupported value: "Sometimes"`},
		{"no review versions", func(w *v1.ValidatingWebhook) { w.AdmissionReviewVersions = nil }, "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"},
		{"unknown review version", func(w *v1.ValidatingWebhook) { w.AdmissionReviewVersions = []string{"v2"} }, "must include at least one of v1, v1beta1"},
		{"url and service", func(w *v1.ValidatingWebhook) {
			w.ClientConfig.Service = &v1.ServiceReference{Namespace: "ns", Name: "svc"}
		}, "webhooks[0].clientConfig: Required value: exactly one of url or service is required"},
		{"http url", func(w *v1.ValidatingWebhook) { w.ClientConfig.URL = ptr.To("http://127.0.0.1/x") }, "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme"},
		{"service port", func(w *v1.ValidatingWebhook) {
			w.ClientConfig.URL, w.ClientConfig.Service = nil, &v1.ServiceReference{Namespace: "ns", Name: "svc", Port: ptr.To[int32](70000)}
		}, "webhooks[0].clientConfig.service.port: Invalid value: 70000: port is not valid"},
		{"operation wildcard with others", func(w *v1.ValidatingWebhook) {
			w.Rules[0].Operations = []v1.OperationType{v1.OperationAll, v1.Create}
		}, "if '*' is present, must not specify other operations"},
		{"scope", func(w *v1.ValidatingWebhook) { w.Rules[0].Scope = ptr.To(v1.ScopeType("Galaxy")) }, `webhooks[0].rules[0].scope: Unsupported value: "Galaxy"`},
		{"match condition that does not compile", func(w *v1.ValidatingWebhook) {
			w.MatchConditions = []v1.MatchCondition{{Name: "bad", Expression: "object.metadata.name =="}}
		}, "webhooks[0].matchConditions[0].expression: Invalid value: \"object.metadata.name ==\": compilation failed"},
		{"match condition of the wrong type", func(w *v1.ValidatingWebhook) {
			w.MatchConditions = []v1.MatchCondition{{Name: "str", Expression: "'x'"}}
		}, "must evaluate to bool"},
		{"match condition with params", func(w *v1.ValidatingWebhook) {
			w.MatchConditions = []v1.MatchCondition{{Name: "p", Expression: "params.x == 1"}}
		}, "compilation failed"},
		{"match condition that compiles", func(w *v1.ValidatingWebhook) {
			w.MatchConditions = []v1.MatchCondition{{Name: "ok", Expression: "request.userInfo.username != 'system:admin' && has(object.metadata)"}}
		}, ""},
		{"duplicate match condition", func(w *v1.ValidatingWebhook) {
			w.MatchConditions = []v1.MatchCondition{{Name: "a", Expression: "true"}, {Name: "a", Expression: "true"}}
		}, `webhooks[0].matchConditions[1].name: Duplicate value: "a"`},
	}
	v := validation.New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := validWebhook()
			tt.change(&w)
			c := &v1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []v1.ValidatingWebhook{w}}
			defaults.ValidatingWebhookConfiguration(c)
			errs := v.ValidateValidatingWebhookConfiguration(c)
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tt.want != "" && !strings.Contains(errs.ToAggregate().Error(), tt.want):
				t.Errorf("got %v, want %q in it", errs, tt.want)
			}
		})
	}
}

// TestDuplicateWebhookNames: names are unique within a configuration on
// create; an update keeps what the old object already had.
func TestDuplicateWebhookNames(t *testing.T) {
	v := validation.New()
	c := &v1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1"}, Webhooks: []v1.ValidatingWebhook{validWebhook(), validWebhook()}}
	if errs := v.ValidateValidatingWebhookConfiguration(c); !strings.Contains(errs.ToAggregate().Error(), `webhooks[1].name: Duplicate value: "check.example.com"`) {
		t.Errorf("create: %v", errs)
	}
	if errs := v.ValidateValidatingWebhookConfigurationUpdate(c, c.DeepCopy()); len(errs) > 0 {
		t.Errorf("update of an object that had them: %v", errs)
	}
}

func validPolicy() *v1.ValidatingAdmissionPolicy {
	p := &v1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.ValidatingAdmissionPolicySpec{
		MatchConstraints: &v1.MatchResources{ResourceRules: []v1.NamedRuleWithOperations{{RuleWithOperations: v1.RuleWithOperations{
			Operations: []v1.OperationType{v1.Create}, Rule: v1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}}}},
		Validations: []v1.Validation{{Expression: "object.spec.replicas <= 5"}},
	}}
	defaults.ValidatingAdmissionPolicy(p)
	return p
}

// TestValidatingAdmissionPolicyAsUpstream covers the policy's own rules
// and its expressions' compilation.
func TestValidatingAdmissionPolicyAsUpstream(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *v1.ValidatingAdmissionPolicy)
		want   string
	}{
		{"valid", func(*v1.ValidatingAdmissionPolicy) {}, ""},
		{"no validations", func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations = nil }, "spec.validations: Required value: validations or auditAnnotations must contain at least one item"},
		{"no match constraints", func(p *v1.ValidatingAdmissionPolicy) { p.Spec.MatchConstraints = nil }, "spec.matchConstraints: Required value"},
		{"validation that does not compile", func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].Expression = "object.spec.replicas <=" }, "spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": compilation failed"},
		{"variables", func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []v1.Variable{{Name: "max", Expression: "5"}}
			p.Spec.Validations[0].Expression = "object.spec.replicas <= variables.max"
		}, ""},
		{"bad variable name", func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Variables = []v1.Variable{{Name: "in", Expression: "5"}} }, "name is not a valid CEL identifier"},
		{"message expression", func(p *v1.ValidatingAdmissionPolicy) { p.Spec.Validations[0].MessageExpression = "1" }, "spec.validations[0].messageExpression: Invalid value: \"1\": must evaluate to string"},
		{"param kind", func(p *v1.ValidatingAdmissionPolicy) { p.Spec.ParamKind = &v1.ParamKind{APIVersion: "v1"} }, "spec.paramKind.kind: Required value"},
		{"message expression with params", func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &v1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Validations[0].MessageExpression = "'at most ' + params.data.max"
		}, ""},
		{"message expression with params but no paramKind", func(p *v1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "'at most ' + params.data.max"
		}, "undeclared reference to 'params'"},
	}
	v := validation.New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := validPolicy()
			tt.change(p)
			errs := v.ValidateValidatingAdmissionPolicy(p)
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tt.want != "" && !strings.Contains(errs.ToAggregate().Error(), tt.want):
				t.Errorf("got %v, want %q in it", errs, tt.want)
			}
		})
	}
}

// TestBindingsAsUpstream: policyName, paramRef and validationActions.
func TestBindingsAsUpstream(t *testing.T) {
	tests := []struct {
		name string
		spec v1.ValidatingAdmissionPolicyBindingSpec
		want string
	}{
		{"valid", v1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []v1.ValidationAction{v1.Deny}}, ""},
		{"no policy", v1.ValidatingAdmissionPolicyBindingSpec{ValidationActions: []v1.ValidationAction{v1.Deny}}, "spec.policyName: Required value"},
		{"no actions", v1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p"}, "spec.validationActions: Required value: at least one validation action is required"},
		{"deny and warn", v1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []v1.ValidationAction{v1.Deny, v1.Warn}}, "must not contain both Deny and Warn"},
		{"param ref without action", v1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p", ValidationActions: []v1.ValidationAction{v1.Deny}, ParamRef: &v1.ParamRef{Name: "x"}}, "spec.paramRef.parameterNotFoundAction: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := validation.ValidateValidatingAdmissionPolicyBinding(&v1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: tt.spec})
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tt.want != "" && !strings.Contains(errs.ToAggregate().Error(), tt.want):
				t.Errorf("got %v, want %q in it", errs, tt.want)
			}
		})
	}
}
