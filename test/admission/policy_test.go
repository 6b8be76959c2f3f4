package admission_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// policyNamespace makes a namespace labelled for one test's policies:
// every policy of these tests selects only its own namespace, so it
// cannot touch what the package's other tests write.
func policyNamespace(t *testing.T, client kubernetes.Interface, labels map[string]string) string {
	t.Helper()
	l := map[string]string{"policy-test": fmt.Sprintf("t%d", time.Now().UnixNano())}
	for k, v := range labels {
		l[k] = v
	}
	ns, err := client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pol-", Labels: l}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// configMapsIn are match constraints for ConfigMap creates and updates in
// the namespaces carrying ns's test label.
func configMapsIn(client kubernetes.Interface, t *testing.T, ns string) *admissionregistrationv1.MatchResources {
	t.Helper()
	n, err := client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"policy-test": n.Labels["policy-test"]}},
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		}}},
	}
}

// installValidatingPolicy creates a policy and its binding (deleted at
// the test's end) and waits until the watch cache, which admission reads,
// holds both.
func installValidatingPolicy(t *testing.T, client kubernetes.Interface, pol *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	api := client.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(t.Context(), pol, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), pol.Name, metav1.DeleteOptions{})
	})
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create binding: %v", err)
	}
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
	})
	waitCached(t, func(opts metav1.ListOptions) (any, error) {
		return api.ValidatingAdmissionPolicies().List(t.Context(), opts)
	}, pol.Name)
	waitCached(t, func(opts metav1.ListOptions) (any, error) {
		return api.ValidatingAdmissionPolicyBindings().List(t.Context(), opts)
	}, b.Name)
}

// waitCached waits until a list from the watch cache (resourceVersion
// "0") names name.
func waitCached(t *testing.T, list func(metav1.ListOptions) (any, error), name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := list(metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(l.(runtime.Object))
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range items {
			if m, err := meta.Accessor(i); err == nil && m.GetName() == name {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not in the watch cache after 10s", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestValidatingAdmissionPolicy creates a ConfigMap under one policy and
// binding per case and checks what the client gets: the denial with
// upstream's message and code, the warning, or the object stored.
func TestValidatingAdmissionPolicy(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	deny := []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
	type paramRef = admissionregistrationv1.ParamRef
	for _, tc := range []struct {
		name string
		// nsLabels label the test's namespace.
		nsLabels map[string]string
		spec     admissionregistrationv1.ValidatingAdmissionPolicySpec
		// binding: its validationActions (Deny if nil), paramRef and
		// matchResources (nil: all the policy matches).
		actions []admissionregistrationv1.ValidationAction
		ref     *paramRef
		bindNS  *metav1.LabelSelector
		// params are ConfigMaps created in the namespace before the policy.
		params []*corev1.ConfigMap
		cm     *corev1.ConfigMap
		dryRun bool
		// wantErr is the exact message (empty: allowed), wantCode its code.
		wantErr  string
		wantCode int32
		wantWarn string
	}{
		{
			name: "deny refuses with upstream's message and 422",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{
				{Expression: "object.data.?x.orValue('') != 'bad'", Message: "x must not be bad"}}},
			cm:       &corev1.ConfigMap{Data: map[string]string{"x": "bad"}},
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: x must not be bad",
			wantCode: http.StatusUnprocessableEntity,
		},
		{
			name: "deny passes what the validation allows",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{
				{Expression: "object.data.?x.orValue('') != 'bad'", Message: "x must not be bad"}}},
			cm: &corev1.ConfigMap{Data: map[string]string{"x": "good"}},
		},
		{
			name: "reason Forbidden is a 403",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{
				{Expression: "false", Reason: ptr.To(metav1.StatusReasonForbidden)}}},
			cm:       &corev1.ConfigMap{},
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: failed expression: false",
			wantCode: http.StatusForbidden,
		},
		{
			name: "warn admits with a Warning header",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{
				{Expression: "has(object.data) && 'owner' in object.data", Message: "an owner is wanted"}}},
			actions:  []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn},
			cm:       &corev1.ConfigMap{},
			wantWarn: "Validation failed for ValidatingAdmissionPolicy '%p' with binding '%b': an owner is wanted",
		},
		{
			name: "audit alone admits",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{{Expression: "false"}},
				AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "seen", ValueExpression: "'by ' + request.userInfo.username"}}},
			actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
			cm:      &corev1.ConfigMap{},
		},
		{
			name: "messageExpression makes the message",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{
				{Expression: "size(object.data) <= 1", Message: "static", MessageExpression: "'too many keys: ' + string(size(object.data))"}}},
			cm:       &corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}},
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: too many keys: 2",
			wantCode: http.StatusUnprocessableEntity,
		},
		{
			name:     "variables and namespaceObject",
			nsLabels: map[string]string{"tier": "prod"},
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				Variables: []admissionregistrationv1.Variable{{Name: "tier", Expression: "namespaceObject.metadata.labels.tier"}},
				Validations: []admissionregistrationv1.Validation{
					{Expression: "variables.tier != 'prod' || object.metadata.name.startsWith('prod-')", MessageExpression: "'in ' + variables.tier + ' names start with prod-'"}}},
			cm:       &corev1.ConfigMap{},
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: in prod names start with prod-",
			wantCode: http.StatusUnprocessableEntity,
		},
		{
			name: "authorizer and request are CEL variables",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{
				{Expression: "authorizer.requestResource.check('create').allowed() && request.operation == 'CREATE'"},
				{Expression: "!authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').allowed()", Message: "the admin may read secrets"}}},
			cm:       &corev1.ConfigMap{},
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: the admin may read secrets",
			wantCode: http.StatusUnprocessableEntity,
		},
		{
			name: "matchConditions leave out what they do not match",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "checked", Expression: "object.metadata.name.startsWith('checked-')"}},
				Validations:     []admissionregistrationv1.Validation{{Expression: "false"}}},
			cm: &corev1.ConfigMap{},
		},
		{
			name: "matchConditions apply the policy to what they match",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "checked", Expression: "object.metadata.name.startsWith('checked-')"}},
				Validations:     []admissionregistrationv1.Validation{{Expression: "false", Message: "checked"}}},
			cm:       &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "checked-1"}},
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: checked",
			wantCode: http.StatusUnprocessableEntity,
		},
		{
			name:   "binding namespaceSelector that does not match leaves the request alone",
			spec:   admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{{Expression: "false"}}},
			bindNS: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
			cm:     &corev1.ConfigMap{},
		},
		{
			name:     "binding namespaceSelector that matches applies the policy",
			nsLabels: map[string]string{"tier": "prod"},
			spec:     admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "not in prod"}}},
			bindNS:   &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
			cm:       &corev1.ConfigMap{},
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: not in prod",
			wantCode: http.StatusUnprocessableEntity,
		},
		{
			name: "paramRef by name gives params",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				ParamKind:   &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
				Validations: []admissionregistrationv1.Validation{{Expression: "size(object.data) <= int(params.data.max)", MessageExpression: "'at most ' + params.data.max + ' keys'"}}},
			params:   []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"max": "1"}}},
			ref:      &paramRef{Name: "limits", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			cm:       &corev1.ConfigMap{Data: map[string]string{"a": "1", "b": "2"}},
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: at most 1 keys",
			wantCode: http.StatusUnprocessableEntity,
		},
		{
			name: "paramRef selector evaluates every param",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				ParamKind:   &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
				Validations: []admissionregistrationv1.Validation{{Expression: "!(params.data.forbidden in object.data)", MessageExpression: "params.data.forbidden + ' is forbidden'"}}},
			params: []*corev1.ConfigMap{
				{ObjectMeta: metav1.ObjectMeta{Name: "p1", Labels: map[string]string{"param": "yes"}}, Data: map[string]string{"forbidden": "a"}},
				{ObjectMeta: metav1.ObjectMeta{Name: "p2", Labels: map[string]string{"param": "yes"}}, Data: map[string]string{"forbidden": "b"}}},
			ref:      &paramRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"param": "yes"}}, ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			cm:       &corev1.ConfigMap{Data: map[string]string{"b": "1"}},
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: b is forbidden",
			wantCode: http.StatusUnprocessableEntity,
		},
		{
			name: "a missing param with parameterNotFoundAction Deny fails the binding",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				ParamKind:   &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
				Validations: []admissionregistrationv1.Validation{{Expression: "true"}}},
			ref:      &paramRef{Name: "absent", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
			cm:       &corev1.ConfigMap{},
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
			wantCode: http.StatusUnprocessableEntity,
		},
		{
			name: "a missing param with parameterNotFoundAction Allow admits",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				ParamKind:   &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
				Validations: []admissionregistrationv1.Validation{{Expression: "false"}}},
			ref: &paramRef{Name: "absent", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)},
			cm:  &corev1.ConfigMap{},
		},
		{
			name: "failurePolicy Ignore admits on a CEL runtime error",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &ignore,
				Validations: []admissionregistrationv1.Validation{{Expression: "object.data.missing == 'x'"}}},
			cm: &corev1.ConfigMap{Data: map[string]string{"a": "1"}},
		},
		{
			name: "failurePolicy Fail denies on a CEL runtime error",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail,
				Validations: []admissionregistrationv1.Validation{{Expression: "object.data.missing == 'x'"}}},
			cm:       &corev1.ConfigMap{Data: map[string]string{"a": "1"}},
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: missing",
			wantCode: http.StatusUnprocessableEntity,
		},
		{
			name: "a dry-run is denied too",
			spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "no"}}},
			cm:   &corev1.ConfigMap{}, dryRun: true,
			wantErr:  "ValidatingAdmissionPolicy '%p' with binding '%b' denied request: no",
			wantCode: http.StatusUnprocessableEntity,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := policyNamespace(t, client, tc.nsLabels)
			for _, p := range tc.params {
				if _, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			spec := tc.spec
			spec.MatchConstraints = configMapsIn(client, t, ns)
			pol := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns + "-policy"}, Spec: spec}
			actions := tc.actions
			if actions == nil {
				actions = deny
			}
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-binding"},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: pol.Name, ValidationActions: actions, ParamRef: tc.ref}}
			if tc.bindNS != nil {
				b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: tc.bindNS}
			}
			installValidatingPolicy(t, client, pol, b)

			w := &warnings{}
			cfg := rest.CopyConfig(config(t))
			cfg.WarningHandler = w
			wc := kubernetes.NewForConfigOrDie(cfg)
			cm := tc.cm.DeepCopy()
			if cm.Name == "" {
				cm.Name = "subject"
			}
			opts := metav1.CreateOptions{}
			if tc.dryRun {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			_, err := wc.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, opts)
			expand := strings.NewReplacer("%p", pol.Name, "%b", b.Name)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("create: %v, want it admitted", err)
				}
			} else {
				var status apierrors.APIStatus
				want := `configmaps "` + cm.Name + `" is forbidden: ` + expand.Replace(tc.wantErr)
				if !asStatus(err, &status) || err.Error() != want || status.Status().Code != tc.wantCode {
					t.Fatalf("create: %v (%#v), want %d %q", err, status, tc.wantCode, want)
				}
				if _, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("get after the denial: %v, want NotFound", err)
				}
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if tc.wantWarn != "" && !slices.Contains(w.list, expand.Replace(tc.wantWarn)) {
				t.Errorf("warnings %q, want %q", w.list, expand.Replace(tc.wantWarn))
			}
		})
	}
}

func asStatus(err error, status *apierrors.APIStatus) bool {
	s, ok := err.(apierrors.APIStatus)
	if ok {
		*status = s
	}
	return ok
}

// TestValidatingAdmissionPolicyFollowsChanges: a binding's deletion and a
// policy's update are in force for the next request.
func TestValidatingAdmissionPolicyFollowsChanges(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := policyNamespace(t, client, nil)
	pol := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns + "-policy"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{MatchConstraints: configMapsIn(client, t, ns),
			Validations: []admissionregistrationv1.Validation{{Expression: "!object.metadata.name.startsWith('a')", Message: "no a"}}}}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-binding"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: pol.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	installValidatingPolicy(t, client, pol, b)
	create := func(name string) error {
		_, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	if err := create("a1"); err == nil {
		t.Fatal("a1 admitted, want denied")
	}
	// The policy now refuses names starting with b instead.
	cur, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(t.Context(), pol.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Validations[0] = admissionregistrationv1.Validation{Expression: "!object.metadata.name.startsWith('b')", Message: "no b"}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the policy's update in force", func() bool {
		return create("b-probe") != nil && create(fmt.Sprintf("a%d", time.Now().UnixNano())) == nil
	})
	if err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(t.Context(), b.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the binding's deletion in force", func() bool { return create(fmt.Sprintf("b%d", time.Now().UnixNano())) == nil })
}

// waitFor polls cond for up to a second: the policies are read from the
// watch cache, which follows etcd within milliseconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a second", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestValidatingAdmissionPolicyTypeChecking: the status controller writes
// status.typeChecking once per generation, with upstream's warnings
// (field, message) for expressions that do not type-check against the
// matched kind's schema (the e2e "should type check validation
// expressions").
func TestValidatingAdmissionPolicyTypeChecking(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := policyNamespace(t, client, nil)
	match := configMapsIn(client, t, ns)
	match.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}
	type warning struct{ field, contains string }
	for _, tc := range []struct {
		name       string
		validation admissionregistrationv1.Validation
		want       []warning
	}{
		{"well typed", admissionregistrationv1.Validation{Expression: "object.spec.replicas > 1"}, nil},
		{"type confusion", admissionregistrationv1.Validation{Expression: "object.spec.replicas > '1'", MessageExpression: "'wants replicas > 1, got ' + object.spec.replicas"}, []warning{
			{"spec.validations[0].expression", "found no matching overload for '_>_' applied to '(int, string)'"},
			{"spec.validations[0].messageExpression", "found no matching overload for '_+_' applied to '(string, int)'"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
			pol, err := api.Create(t.Context(), &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{GenerateName: ns + "-"},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{MatchConstraints: match, Validations: []admissionregistrationv1.Validation{tc.validation}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = api.Delete(context.Background(), pol.Name, metav1.DeleteOptions{}) })
			deadline := time.Now().Add(30 * time.Second)
			for pol.Status.TypeChecking == nil {
				if time.Now().After(deadline) {
					t.Fatalf("no status.typeChecking after 30s: %+v", pol.Status)
				}
				time.Sleep(20 * time.Millisecond)
				if pol, err = api.Get(t.Context(), pol.Name, metav1.GetOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if pol.Status.ObservedGeneration != pol.Generation {
				t.Errorf("observedGeneration %d, want %d", pol.Status.ObservedGeneration, pol.Generation)
			}
			got := pol.Status.TypeChecking.ExpressionWarnings
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %+v, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if got[i].FieldRef != w.field || !strings.Contains(got[i].Warning, w.contains) {
					t.Errorf("warning %d = %+v, want %s containing %q", i, got[i], w.field, w.contains)
				}
			}
		})
	}
}

// BenchmarkCreateThroughValidatingAdmissionPolicy measures what a
// ValidatingAdmissionPolicy with 5 validations adds to a create: it
// creates ConfigMaps in pairs, one in a namespace the policy matches and
// one in a namespace it does not, alternating which of the two goes
// first (so that neither always follows the other's leftover work), and
// reports the p50 of each, their difference (p50-policy-µs) and the
// median of the per-pair differences (p50-pair-policy-µs, less fragile
// than the difference of two medians), plus the process's CPU per create
// (client and server: they share the process). The other namespace pays
// for reading and matching the bindings too, so the difference is the
// evaluation's cost.
func BenchmarkCreateThroughValidatingAdmissionPolicy(b *testing.B) {
	client := kubernetes.NewForConfigOrDie(config(b))
	ns := benchNamespace(b, client, map[string]string{"policy-bench": "yes"})
	plain := benchNamespace(b, client, nil)
	api := client.AdmissionregistrationV1()
	var validations []admissionregistrationv1.Validation
	for i := range 5 {
		validations = append(validations, admissionregistrationv1.Validation{Expression: fmt.Sprintf("!has(object.data) || !('k%d' in object.data) || object.metadata.name.size() > %d", i, i)})
	}
	pol, err := api.ValidatingAdmissionPolicies().Create(b.Context(), &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: validations, MatchConstraints: &admissionregistrationv1.MatchResources{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"policy-bench": "yes"}},
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}}}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), pol.Name, metav1.DeleteOptions{})
	})
	bind, err := api.ValidatingAdmissionPolicyBindings().Create(b.Context(), &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: pol.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), bind.Name, metav1.DeleteOptions{})
	})
	// In force once a denial comes back.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := client.CoreV1().ConfigMaps(ns).Create(b.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Data: map[string]string{"k1": ""}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the policy is not in force after 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	create := func(namespace string, cm *corev1.ConfigMap) time.Duration {
		start := time.Now()
		if _, err := client.CoreV1().ConfigMaps(namespace).Create(b.Context(), cm, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var with, without, pairs []time.Duration
	cpu := processCPU(b)
	for i := 0; b.Loop(); i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i)}, Data: map[string]string{"k0": "v"}}
		var w, wo time.Duration
		if i%2 == 0 {
			w = create(ns, cm)
			wo = create(plain, cm)
		} else {
			wo = create(plain, cm)
			w = create(ns, cm)
		}
		with, without, pairs = append(with, w), append(without, wo), append(pairs, w-wo)
	}
	cpu = processCPU(b) - cpu
	p50 := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
	pw, pwo := p50(with), p50(without)
	b.ReportMetric(float64(pw.Microseconds()), "p50-with-µs")
	b.ReportMetric(float64(pwo.Microseconds()), "p50-without-µs")
	b.ReportMetric(float64((pw - pwo).Microseconds()), "p50-policy-µs")
	b.ReportMetric(float64(p50(pairs).Microseconds()), "p50-pair-policy-µs")
	b.ReportMetric(float64(cpu.Microseconds())/float64(2*len(pairs)), "cpu-µs/create")
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchNamespace(b *testing.B, client kubernetes.Interface, labels map[string]string) string {
	b.Helper()
	ns, err := client.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-", Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}

// TestValidatingAdmissionPolicyMatchPolicyEquivalent: a policy whose
// rules name events.k8s.io/v1 events applies to a core/v1 Event under
// matchPolicy Equivalent (v1's default), and sees it converted (its
// message as the note, the kind and resource as the policy's), while
// under Exact it leaves the core Event alone.
func TestValidatingAdmissionPolicyMatchPolicyEquivalent(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	for _, tc := range []struct {
		policy   admissionregistrationv1.MatchPolicyType
		wantDeny bool
	}{
		{admissionregistrationv1.Equivalent, true},
		{admissionregistrationv1.Exact, false},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			ns := policyNamespace(t, client, nil)
			match := configMapsIn(client, t, ns)
			match.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"events.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"events"}}
			match.MatchPolicy = ptr.To(tc.policy)
			pol := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns + "-policy"}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: match,
				Validations: []admissionregistrationv1.Validation{{Expression: "object.note != 'bad'",
					MessageExpression: "'note ' + object.note + ' seen as ' + request.kind.group + '/' + request.kind.kind + ' ' + request.resource.group + ' from ' + request.requestKind.version + '/' + request.requestKind.kind"}}}}
			installValidatingPolicy(t, client, pol, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-binding"},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: pol.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}})
			_, err := client.CoreV1().Events(ns).Create(t.Context(), &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Message: "bad", Reason: "Test", Type: corev1.EventTypeNormal,
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p"}, EventTime: metav1.NowMicro(), ReportingController: "example.com/test", ReportingInstance: "i", Action: "Test"}, metav1.CreateOptions{})
			want := `events "e" is forbidden: ValidatingAdmissionPolicy '` + pol.Name + `' with binding '` + ns + `-binding' denied request: note bad seen as events.k8s.io/Event events.k8s.io from v1/Event`
			switch {
			case tc.wantDeny && (err == nil || err.Error() != want):
				t.Errorf("create core Event: %v, want %q", err, want)
			case !tc.wantDeny && err != nil:
				t.Errorf("create core Event: %v, want it admitted", err)
			}
		})
	}
}
