package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// TestUntrackedEvaluationIsTracked: a policy evaluated without cost
// tracking (when the estimate allows it) decides exactly as the tracked
// evaluation of the same policy: denials, messages (messageExpressions
// included), reasons and evaluation errors; and where the bound does not
// allow it (a large object under a quadratic expression, the request
// budget, a policy reading request or variables) the tracked evaluation
// runs, with upstream's cost-limit errors.
func TestUntrackedEvaluationIsTracked(t *testing.T) {
	if !untrackedWorks() {
		t.Fatal("withoutCostTracking does not work with this cel-go")
	}
	small := map[string]string{"k0": "v", "team": "a"}
	large := map[string]string{}
	for i := range 1500 {
		large[fmt.Sprintf("key%04d", i)] = "value"
	}
	quadratic := "object.data.all(k, object.data.all(j, size(object.data[k]) + size(object.data[j]) >= 0))"
	var five, heavy []admissionregistrationv1.Validation
	for i := range 5 {
		five = append(five, admissionregistrationv1.Validation{Expression: fmt.Sprintf("!has(object.data) || !('k%d' in object.data) || object.metadata.name.size() > %d", i, i)})
	}
	// Comparing two strings of 9 MB costs 0.9 M each, within the
	// per-call limit; twelve of them are past the budget.
	for range 12 {
		heavy = append(heavy, admissionregistrationv1.Validation{Expression: "object.data.a == object.data.b"})
	}
	long := map[string]string{"a": strings.Repeat("x", 9_000_000), "b": strings.Repeat("x", 9_000_000)}
	// Enough iterations for the interpreter to look at the context
	// (every celconfig.CheckFrequency), small enough to run untracked.
	many := map[string]string{}
	for i := range 150 {
		many[fmt.Sprintf("key%04d", i)] = "value"
	}
	reason := metav1.StatusReasonForbidden
	for _, tc := range []struct {
		name        string
		validations []admissionregistrationv1.Validation
		variables   []admissionregistrationv1.Variable
		data        map[string]string
		untracked   bool // the untracked programs are used
		wantDeny    string
		cancelled   bool              // the request's context is cancelled
		param       map[string]string // a ConfigMap parameter's data (nil: none)
		nsLabels    map[string]string // the namespace's labels
	}{
		{"five validations, all pass", five, nil, small, true, "", false, nil, nil},
		{"five validations, one fails", five, nil, map[string]string{"k2": "x"}, true, "failed expression: !has(object.data) || !('k2' in object.data) || object.metadata.name.size() > 2", false, nil, nil},
		{"messageExpression", []admissionregistrationv1.Validation{{Expression: "object.metadata.name.startsWith('x')", MessageExpression: "'name ' + object.metadata.name + ' has ' + string(size(object.data)) + ' keys'", Reason: &reason}}, nil, small, true, "name cm has 2 keys", false, nil, nil},
		{"message and messageExpression that fails", []admissionregistrationv1.Validation{{Expression: "false", Message: "plain", MessageExpression: "string(object.data.nosuch)"}}, nil, small, true, "plain", false, nil, nil},
		{"evaluation error", []admissionregistrationv1.Validation{{Expression: "object.data.nosuchkey == 'x'"}}, nil, small, true, "expression 'object.data.nosuchkey == 'x'' resulted in error: no such key: nosuchkey", false, nil, nil},
		{"oldObject", []admissionregistrationv1.Validation{{Expression: "oldObject == null && object.data.team == 'a'"}}, nil, small, true, "", false, nil, nil},
		{"quadratic on a small object", []admissionregistrationv1.Validation{{Expression: quadratic}}, nil, small, true, "", false, nil, nil},
		// The estimate for a small object (every size below 256) is past the
		// per-call limit, the actual cost is not: tracked, and admitted.
		{"cubic on a small object", []admissionregistrationv1.Validation{{Expression: "object.data.all(a, object.data.all(b, object.data.all(c, a + b + c != '')))"}}, nil, small, false, "", false, nil, nil},
		{"quadratic past the per-call limit", []admissionregistrationv1.Validation{{Expression: quadratic}}, nil, large, false, "operation cancelled: actual cost limit exceeded", false, nil, nil},
		{"past the request budget", heavy, nil, long, false, "validation failed due to running out of cost budget, no further validation rules will be run", false, nil, nil},
		{"reads request", []admissionregistrationv1.Validation{{Expression: "request.operation == 'CREATE'"}}, nil, small, false, "", false, nil, nil},
		{"has variables", []admissionregistrationv1.Validation{{Expression: "variables.n == 'cm'"}}, []admissionregistrationv1.Variable{{Name: "n", Expression: "object.metadata.name"}}, small, false, "", false, nil, nil},
		// A cancelled request interrupts a comprehension, as upstream's
		// ContextEval does; expressions without one never look.
		{"a loop in a cancelled request", []admissionregistrationv1.Validation{{Expression: "object.data.all(k, k != '')"}}, nil, many, true, "operation interrupted", true, nil, nil},
		{"no loop in a cancelled request", five, nil, small, true, "", true, nil, nil},
		// The parameter is bounded by its JSON length.
		{"reads params", []admissionregistrationv1.Validation{{Expression: "object.data.k0 == params.data.want", MessageExpression: "'want ' + params.data.want"}}, nil, small, true, "", false, map[string]string{"want": "v"}, nil},
		{"params deny", []admissionregistrationv1.Validation{{Expression: "object.data.k0 == params.data.want", MessageExpression: "'want ' + params.data.want"}}, nil, small, true, "want x", false, map[string]string{"want": "x"}, nil},
		{"quadratic over a large parameter", []admissionregistrationv1.Validation{{Expression: "params.data.all(k, params.data.all(j, size(params.data[k]) + size(params.data[j]) >= 0))"}}, nil, small, false, "operation cancelled: actual cost limit exceeded", false, large, nil},
		// namespaceObject is bounded by the namespace's bound.
		{"reads namespaceObject", []admissionregistrationv1.Validation{{Expression: "namespaceObject.metadata.labels.team == object.data.team"}}, nil, small, true, "", false, nil, map[string]string{"team": "a"}},
		{"namespaceObject denies", []admissionregistrationv1.Validation{{Expression: "namespaceObject.metadata.labels.team == object.data.team"}}, nil, small, true, "failed expression", false, nil, map[string]string{"team": "b"}},
		{"quadratic over a large namespace", []admissionregistrationv1.Validation{{Expression: "namespaceObject.metadata.labels.all(k, namespaceObject.metadata.labels.all(j, size(k) + size(j) >= 0))"}}, nil, small, false, "operation cancelled: actual cost limit exceeded", false, nil, large},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: tc.validations, Variables: tc.variables}}
			var param runtime.Object
			if tc.param != nil {
				pol.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
				data := map[string]any{}
				for k, v := range tc.param {
					data[k] = v
				}
				param = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": "params", "namespace": "ns", "uid": "param-uid", "resourceVersion": "7"}, "data": data}}
			}
			v := compileValidator(pol)
			tracked := *v
			tracked.untracked = nil
			evaluate := func(v *validator) ([]decision, bool) {
				cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: tc.data}
				gvk, gvr := corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithResource("configmaps")
				a := admission.NewAttributesRecord(cm, nil, gvk, "ns", cm.Name, gvr, "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admin"})
				tg := &target{resource: gvr, kind: gvk}
				va, err := versioned(t.Context(), a, tg, true)
				if err != nil {
					t.Fatal(err)
				}
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: tc.nsLabels}}
				used := v.untracked != nil && v.untracked.usable(va.VersionedObject.Object(), va.VersionedOldObject.Object(), param, ns)
				ctx := t.Context()
				if tc.cancelled {
					var cancel context.CancelFunc
					ctx, cancel = context.WithCancel(ctx)
					cancel()
				}
				d, _ := v.evaluate(ctx, tg, va, param, ns, allowAll{})
				return d, used
			}
			if tc.name == "cubic on a small object" && (v.untracked == nil || v.untracked.fitsWithin(8)) {
				t.Error("the cubic expression is not refused by its estimate")
			}
			got, used := evaluate(v)
			want, _ := evaluate(&tracked)
			if used != tc.untracked {
				t.Errorf("untracked used: %v, want %v", used, tc.untracked)
			}
			if len(got) != len(want) {
				t.Fatalf("%d decisions, tracked %d", len(got), len(want))
			}
			var denied []string
			for i := range want {
				g, w := got[i], want[i]
				g.elapsed, w.elapsed = 0, 0
				if g != w {
					t.Errorf("decision %d: %+v, tracked %+v", i, g, w)
				}
				if w.deny {
					denied = append(denied, w.message)
				}
			}
			if msg := strings.Join(denied, "; "); (tc.wantDeny == "") != (msg == "") || !strings.Contains(msg, tc.wantDeny) {
				t.Errorf("denials %q, want %q", msg, tc.wantDeny)
			}
		})
	}
}
