package policy

import (
	"context"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

// lazyFixture is a ConfigMap create in namespace "ns" by "admin", with
// its versioned attributes, target and namespace.
func lazyFixture(t *testing.T) (*admission.VersionedAttributes, *target, *corev1.Namespace) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k0": "v"}}
	gvk, gvr := corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithResource("configmaps")
	a := admission.NewAttributesRecord(cm, nil, gvk, "ns", cm.Name, gvr, "", admission.Create, &metav1.CreateOptions{}, false,
		&user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}, Extra: map[string][]string{"x": {"y"}}})
	tg := &target{resource: gvr, kind: gvk}
	va, err := versioned(t.Context(), a, tg, true)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"team": "x"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	return va, tg, ns
}

// TestInputsBuildOnlyWhatExpressionsName: the values an expression set
// may read are built when an expression names them, and only then (the
// object and oldObject always, as upstream prepares them first).
func TestInputsBuildOnlyWhatExpressionsName(t *testing.T) {
	param := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Data: map[string]string{"max": "3"}}
	always := builtObject | builtOldObject
	for _, tc := range []struct {
		name       string
		expression string
		variables  []admissionregistrationv1.Variable
		param      runtime.Object
		withAuthz  bool
		want       uint8
	}{
		{"object only", "object.metadata.name == 'cm' && 'k0' in object.data", nil, nil, true, always},
		{"oldObject", "oldObject == null", nil, nil, true, always},
		{"request", "request.operation == 'CREATE' && request.userInfo.username == 'admin'", nil, nil, true, always | builtRequest},
		{"namespaceObject", "namespaceObject.metadata.labels.team == 'x'", nil, nil, true, always | builtNamespace},
		{"authorizer", "authorizer.group('').resource('pods').check('get').allowed()", nil, nil, true, always | builtAuthorizer},
		{"authorizer.requestResource", "authorizer.requestResource.check('get').allowed()", nil, nil, true, always | builtResourceAuthorizer},
		{"params", "params.data.max == '3'", nil, param, true, always | builtParams},
		{"null params", "params == null", nil, nil, true, always | builtParams},
		{"a variable naming request", "variables.op == 'CREATE'", []admissionregistrationv1.Variable{{Name: "op", Expression: "request.operation"}, {Name: "ns", Expression: "namespaceObject.metadata.name"}}, nil, true, always | builtRequest},
		{"a variable not read", "object.metadata.name == 'cm'", []admissionregistrationv1.Variable{{Name: "op", Expression: "request.operation"}}, nil, true, always},
		{"short-circuit spares the request", "true || request.operation == 'CREATE'", nil, nil, true, always},
		{"no authorizer given", "object.metadata.name == 'cm'", nil, nil, false, always},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := plugincel.OptionalVariableDeclarations{HasParams: true, HasAuthorizer: true}
			c, err := newCompiler(tc.variables, opts)
			if err != nil {
				t.Fatal(err)
			}
			compiled := compileAll(c, []plugincel.ExpressionAccessor{&validationExpr{admissionregistrationv1.Validation{Expression: tc.expression}}}, opts)
			if compiled[0].Error != nil {
				t.Fatalf("compile: %v", compiled[0].Error)
			}
			va, tg, ns := lazyFixture(t)
			in := newInputs(va, tg, tc.param, ns, allowAll{})
			res, _, err := in.evaluate(t.Context(), c, compiled, tc.withAuthz, 1_000_000)
			if err != nil || res[0].Error != nil {
				t.Fatalf("evaluate: %v, %v", err, res[0].Error)
			}
			if res[0].EvalResult.Value() != true {
				t.Errorf("result %v, want true", res[0].EvalResult)
			}
			if in.built != tc.want {
				t.Errorf("built %07b, want %07b", in.built, tc.want)
			}
		})
	}
}

// TestLazyEvaluationIsUpstreams: the lazy inputs give what upstream's
// ForInput gives for the same compiled expressions: values, errors,
// the remaining budget, a budget running out (composited variables
// included) and an authorizer left out.
func TestLazyEvaluationIsUpstreams(t *testing.T) {
	param := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Data: map[string]string{"max": "3"}}
	vars := []admissionregistrationv1.Variable{
		{Name: "op", Expression: "request.operation"},
		{Name: "big", Expression: "[1,2,3,4,5,6,7,8,9,10].map(x, [1,2,3,4,5,6,7,8,9,10].map(y, x*y))"},
		{Name: "bad", Expression: "object.data.missing"},
	}
	exprs := []string{
		"object.metadata.name == 'cm'",
		"object.metadata.name",
		"request.operation + '/' + request.kind.kind + '/' + request.resource.resource + '/' + string(request.dryRun) + '/' + request.userInfo.extra.x[0]",
		"namespaceObject.metadata.name + string(has(namespaceObject.metadata.managedFields))",
		"authorizer.group('').resource('pods').namespace('ns').check('get').allowed()",
		"authorizer.requestResource.check('get').reason()",
		"params == null ? 'none' : params.data.max",
		"variables.op",
		"variables.bad",
		"size(variables.big)",
		"object.data.nosuchkey == 'x'",
		"oldObject == null",
		"request.options.kind",
	}
	for _, budget := range []int64{1_000_000, 60, 5} {
		for _, p := range []runtime.Object{nil, param} {
			for _, withAuthz := range []bool{true, false} {
				t.Run(fmt.Sprintf("budget %d params %v authz %v", budget, p != nil, withAuthz), func(t *testing.T) {
					opts := plugincel.OptionalVariableDeclarations{HasParams: true, HasAuthorizer: withAuthz}
					var accessors []plugincel.ExpressionAccessor
					for i, e := range exprs {
						if !withAuthz && i >= 4 && i <= 5 {
							accessors = append(accessors, nil) // a placeholder
							continue
						}
						accessors = append(accessors, &messageExpr{e})
					}
					c, err := newCompiler(vars, opts)
					if err != nil {
						t.Fatal(err)
					}
					upstream := c.CompileCondition(accessors, opts, environment.StoredExpressions)
					compiled := compileAll(c, accessors, opts)

					var authz = allowAll{}
					upVars := plugincel.OptionalVariableBindings{VersionedParams: p}
					if withAuthz {
						upVars.Authorizer = authz
					}
					va, tg, ns := lazyFixture(t)
					req := plugincel.CreateAdmissionRequest(va.Attributes, metav1.GroupVersionResource(tg.resource), metav1.GroupVersionKind(va.VersionedKind))
					want, wantRemaining, wantErr := upstream.ForInput(context.Background(), va, req, upVars, plugincel.CreateNamespaceObject(ns), budget)

					va, tg, ns = lazyFixture(t)
					got, gotRemaining, gotErr := newInputs(va, tg, p, ns, authz).evaluate(context.Background(), c, compiled, withAuthz, budget)

					if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || gotRemaining != wantRemaining || len(got) != len(want) {
						t.Fatalf("got %d results, remaining %d, error %v; upstream %d, %d, %v", len(got), gotRemaining, gotErr, len(want), wantRemaining, wantErr)
					}
					for i := range want {
						g, w := got[i], want[i]
						if fmt.Sprint(g.Error) != fmt.Sprint(w.Error) || fmt.Sprint(g.EvalResult) != fmt.Sprint(w.EvalResult) || g.ExpressionAccessor != w.ExpressionAccessor {
							t.Errorf("%d (%v): got %v / %v, upstream %v / %v", i, w.ExpressionAccessor, g.EvalResult, g.Error, w.EvalResult, w.Error)
						}
					}
				})
			}
		}
	}
}
