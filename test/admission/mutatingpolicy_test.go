package admission_test

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// installMutatingPolicy creates a policy and its binding (deleted at the
// test's end) and waits until the watch cache holds both.
func installMutatingPolicy(t *testing.T, client kubernetes.Interface, pol *admissionregistrationv1.MutatingAdmissionPolicy, b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	t.Helper()
	api := client.AdmissionregistrationV1()
	if _, err := api.MutatingAdmissionPolicies().Create(t.Context(), pol, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create policy: %v", err)
	}
	t.Cleanup(func() {
		_ = api.MutatingAdmissionPolicies().Delete(context.Background(), pol.Name, metav1.DeleteOptions{})
	})
	if _, err := api.MutatingAdmissionPolicyBindings().Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create binding: %v", err)
	}
	t.Cleanup(func() {
		_ = api.MutatingAdmissionPolicyBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
	})
	waitCached(t, func(opts metav1.ListOptions) (any, error) {
		return api.MutatingAdmissionPolicies().List(t.Context(), opts)
	}, pol.Name)
	waitCached(t, func(opts metav1.ListOptions) (any, error) {
		return api.MutatingAdmissionPolicyBindings().List(t.Context(), opts)
	}, b.Name)
}

func applyConfiguration(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}
}

func jsonPatch(expr string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr}}
}

// TestMutatingAdmissionPolicy creates a ConfigMap under the case's
// policies (each with one binding, run in name order) and checks what is
// answered and stored.
func TestMutatingAdmissionPolicy(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ignore := admissionregistrationv1.Ignore
	type pol struct {
		spec admissionregistrationv1.MutatingAdmissionPolicySpec
		ref  *admissionregistrationv1.ParamRef
	}
	for _, tc := range []struct {
		name     string
		policies []pol
		params   []*corev1.ConfigMap
		cm       *corev1.ConfigMap
		dryRun   bool
		// wantData and wantLabels must be in what is answered (and, but
		// for a dry run, stored).
		wantData, wantLabels map[string]string
		wantErr              string
		wantCode             int32
	}{
		{
			name:       "ApplyConfiguration merges into the object",
			policies:   []pol{{spec: admissionregistrationv1.MutatingAdmissionPolicySpec{Mutations: []admissionregistrationv1.Mutation{applyConfiguration(`Object{metadata: Object.metadata{labels: {"mutated": "apply"}}}`)}}}},
			cm:         &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kept": "yes"}}},
			wantLabels: map[string]string{"mutated": "apply", "kept": "yes"},
		},
		{
			name:     "JSONPatch patches the object",
			policies: []pol{{spec: admissionregistrationv1.MutatingAdmissionPolicySpec{Mutations: []admissionregistrationv1.Mutation{jsonPatch(`[JSONPatch{op: "add", path: "/data/added", value: object.data.a + "!"}]`)}}}},
			cm:       &corev1.ConfigMap{Data: map[string]string{"a": "1"}},
			wantData: map[string]string{"a": "1", "added": "1!"},
		},
		{
			name: "params feed the mutation",
			policies: []pol{{spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
				Mutations: []admissionregistrationv1.Mutation{applyConfiguration(`Object{data: {"team": params.data.team}}`)}},
				ref: &admissionregistrationv1.ParamRef{Name: "defaults", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}}},
			params:   []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Data: map[string]string{"team": "blue"}}},
			cm:       &corev1.ConfigMap{},
			wantData: map[string]string{"team": "blue"},
		},
		{
			name: "matchConditions leave out what they do not match",
			policies: []pol{{spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "only-m", Expression: "object.metadata.name.startsWith('m-')"}},
				Mutations:       []admissionregistrationv1.Mutation{applyConfiguration(`Object{metadata: Object.metadata{labels: {"mutated": "yes"}}}`)}}}},
			cm:         &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"untouched": "yes"}}},
			wantLabels: map[string]string{"untouched": "yes"},
		},
		{
			name:       "a dry run answers the mutated object and stores nothing",
			policies:   []pol{{spec: admissionregistrationv1.MutatingAdmissionPolicySpec{Mutations: []admissionregistrationv1.Mutation{applyConfiguration(`Object{metadata: Object.metadata{labels: {"mutated": "dry"}}}`)}}}},
			cm:         &corev1.ConfigMap{},
			dryRun:     true,
			wantLabels: map[string]string{"mutated": "dry"},
		},
		{
			name: "reinvocationPolicy IfNeeded runs a policy again after a later one changed the object",
			policies: []pol{
				{spec: admissionregistrationv1.MutatingAdmissionPolicySpec{ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
					Mutations: []admissionregistrationv1.Mutation{jsonPatch(`has(object.data) && 'b' in object.data && !('a-saw-b' in object.data) ? [JSONPatch{op: "add", path: "/data/a-saw-b", value: "yes"}] : []`)}}},
				{spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
					Mutations: []admissionregistrationv1.Mutation{applyConfiguration(`Object{data: {"b": "set"}}`)}}},
			},
			cm:       &corev1.ConfigMap{},
			wantData: map[string]string{"b": "set", "a-saw-b": "yes"},
		},
		{
			name: "failurePolicy Fail refuses on a CEL runtime error",
			policies: []pol{{spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				Mutations: []admissionregistrationv1.Mutation{jsonPatch(`[JSONPatch{op: "add", path: "/data/x", value: object.data.missing}]`)}}}},
			cm:       &corev1.ConfigMap{Data: map[string]string{"a": "1"}},
			wantErr:  `policy '%p' with binding '%b' denied request: expression '[JSONPatch{op: "add", path: "/data/x", value: object.data.missing}]' resulted in error: no such key: missing`,
			wantCode: http.StatusForbidden,
		},
		{
			name: "failurePolicy Ignore admits unchanged on a CEL runtime error",
			policies: []pol{{spec: admissionregistrationv1.MutatingAdmissionPolicySpec{FailurePolicy: &ignore,
				Mutations: []admissionregistrationv1.Mutation{jsonPatch(`[JSONPatch{op: "add", path: "/data/x", value: object.data.missing}]`)}}}},
			cm:       &corev1.ConfigMap{Data: map[string]string{"a": "1"}},
			wantData: map[string]string{"a": "1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := policyNamespace(t, client, nil)
			for _, p := range tc.params {
				if _, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			var names []string
			for i, p := range tc.policies {
				spec := p.spec
				spec.MatchConstraints = configMapsIn(client, t, ns)
				name := ns + "-" + string(rune('a'+i))
				names = append(names, name)
				installMutatingPolicy(t, client, &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec},
					&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-binding"},
						Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name, ParamRef: p.ref}})
			}
			cm := tc.cm.DeepCopy()
			cm.Name = "subject"
			opts := metav1.CreateOptions{}
			if tc.dryRun {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			got, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, opts)
			if tc.wantErr != "" {
				// The generic policy dispatcher's message has no "is forbidden" prefix, as upstream's.
				want := strings.NewReplacer("%p", names[0], "%b", names[0]+"-binding").Replace(tc.wantErr)
				var status apierrors.APIStatus
				if !asStatus(err, &status) || err.Error() != want || status.Status().Code != tc.wantCode {
					t.Fatalf("create: %v, want %d %q", err, tc.wantCode, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			check := func(what string, obj *corev1.ConfigMap) {
				t.Helper()
				for k, v := range tc.wantData {
					if obj.Data[k] != v {
						t.Errorf("%s: data %v, want %v in it", what, obj.Data, tc.wantData)
					}
				}
				for k, v := range tc.wantLabels {
					if obj.Labels[k] != v {
						t.Errorf("%s: labels %v, want %v in them", what, obj.Labels, tc.wantLabels)
					}
				}
				if tc.wantLabels != nil && len(obj.Labels) != len(tc.wantLabels) {
					t.Errorf("%s: labels %v, want exactly %v", what, obj.Labels, tc.wantLabels)
				}
				if tc.wantData != nil && !maps.Equal(obj.Data, tc.wantData) {
					t.Errorf("%s: data %v, want exactly %v", what, obj.Data, tc.wantData)
				}
			}
			check("answered", got)
			stored, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{})
			if tc.dryRun {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("get after a dry run: %v, want NotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			check("stored", stored)
		})
	}
}

// TestAdmissionPoliciesThroughKubectl: what kubectl users see — the
// denial's message, the Warn action's warning and a dry run's mutation.
func TestAdmissionPoliciesThroughKubectl(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := policyNamespace(t, client, nil)
	match := configMapsIn(client, t, ns)
	installValidatingPolicy(t, client, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns + "-v"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{MatchConstraints: match, Validations: []admissionregistrationv1.Validation{
			{Expression: "!has(object.data) || !('forbidden' in object.data)", Message: "no forbidden key"},
			{Expression: "has(object.data) && 'owner' in object.data", Message: "an owner is wanted"}}}},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-v-binding"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: ns + "-v", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}}})
	installMutatingPolicy(t, client, &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns + "-m"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: match, Mutations: []admissionregistrationv1.Mutation{
			applyConfiguration(`Object{metadata: Object.metadata{labels: {"stamped": "by-policy"}}}`)}}},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-m-binding"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: ns + "-m"}})

	out, err := kubectl(t, "", "-n", ns, "create", "configmap", "dry", "--from-literal=owner=me", "--dry-run=server", "-o", "jsonpath={.metadata.labels.stamped}")
	if err != nil || out != "by-policy" {
		t.Errorf("kubectl create --dry-run=server: %q %v, want the policy's label", out, err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after the dry run: %v, want NotFound", err)
	}
	out, err = kubectl(t, "", "-n", ns, "create", "configmap", "warned")
	want := "Warning: Validation failed for ValidatingAdmissionPolicy '" + ns + "-v' with binding '" + ns + "-v-binding': an owner is wanted"
	if err != nil || !strings.Contains(out, want) {
		t.Errorf("kubectl create: %q %v, want the warning %q", out, err, want)
	}
	// Deny (with Audit: Deny and Warn together are invalid).
	b, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(t.Context(), ns+"-v-binding", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}
	if _, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Update(t.Context(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want = `error: failed to create configmap: configmaps "denied" is forbidden: ValidatingAdmissionPolicy '` + ns + `-v' with binding '` + ns + `-v-binding' denied request: no forbidden key`
	waitFor(t, "the binding's Deny in force", func() bool {
		out, err = kubectl(t, "", "-n", ns, "create", "configmap", "denied", "--from-literal=forbidden=1", "--from-literal=owner=me")
		return err != nil && strings.Contains(out, want)
	})
}
