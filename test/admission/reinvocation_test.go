package admission_test

import (
	"maps"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestReinvocationAcrossPoliciesAndWebhooks: as upstream's reinvoker, a
// change by a mutating webhook after a MutatingAdmissionPolicy ran makes
// the whole mutating chain run a second time, in which the policies with
// reinvocationPolicy IfNeeded run again; a change made in that second
// pass by a policy reinvokes the webhooks with IfNeeded (and only then).
// The webhook is a real HTTPS server on 127.0.0.1; the created object and
// the webhook's calls show who ran how often.
func TestReinvocationAcrossPoliciesAndWebhooks(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	// The webhook adds data "webhook" (once, so that it changes the
	// object on its first call only) and records what it saw.
	h := newHookServer(t, func(_ string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		if req.Name == "probe" || containsKey(req.Object.Raw, `"webhook"`) {
			return allow()
		}
		pt := admissionv1.PatchTypeJSONPatch
		patch := `[{"op":"add","path":"/data","value":{"webhook":"set"}}]`
		if containsKey(req.Object.Raw, `"data"`) {
			patch = `[{"op":"add","path":"/data/webhook","value":"set"}]`
		}
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: []byte(patch)}
	})
	// sawWebhook adds "policy-saw-webhook" once the webhook's key is there.
	sawWebhook := jsonPatch(`has(object.data) && 'webhook' in object.data && !('policy-saw-webhook' in object.data) ? [JSONPatch{op: "add", path: "/data/policy-saw-webhook", value: "yes"}] : []`)
	// label sets a label: it changes the object on its first run only.
	label := applyConfiguration(`Object{metadata: Object.metadata{labels: {"policy": "ran"}}}`)
	for _, tc := range []struct {
		name          string
		policy        admissionregistrationv1.MutatingAdmissionPolicySpec
		webhookPolicy admissionregistrationv1.ReinvocationPolicyType
		wantData      map[string]string
		// wantCalls: how often the webhook was called for the object.
		wantCalls int
	}{
		{
			name:          "a webhook's change reinvokes an IfNeeded policy",
			policy:        admissionregistrationv1.MutatingAdmissionPolicySpec{ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy, Mutations: []admissionregistrationv1.Mutation{sawWebhook}},
			webhookPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			wantData:      map[string]string{"webhook": "set", "policy-saw-webhook": "yes"},
			wantCalls:     1,
		},
		{
			name:          "a webhook's change does not reinvoke a Never policy",
			policy:        admissionregistrationv1.MutatingAdmissionPolicySpec{ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy, Mutations: []admissionregistrationv1.Mutation{sawWebhook}},
			webhookPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
			wantData:      map[string]string{"webhook": "set"},
			wantCalls:     1,
		},
		{
			name:          "a reinvoked policy's change reinvokes an IfNeeded webhook",
			policy:        admissionregistrationv1.MutatingAdmissionPolicySpec{ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy, Mutations: []admissionregistrationv1.Mutation{sawWebhook}},
			webhookPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
			wantData:      map[string]string{"webhook": "set", "policy-saw-webhook": "yes"},
			wantCalls:     2,
		},
		{
			name:          "a reinvoked policy that changes nothing does not reinvoke the webhook",
			policy:        admissionregistrationv1.MutatingAdmissionPolicySpec{ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy, Mutations: []admissionregistrationv1.Mutation{label}},
			webhookPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
			wantData:      map[string]string{"webhook": "set"},
			wantCalls:     1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := policyNamespace(t, client, nil)
			spec := tc.policy
			spec.MatchConstraints = configMapsIn(client, t, ns)
			installMutatingPolicy(t, client, &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: spec},
				&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-binding"},
					Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: ns}})
			hook := mutatingHook("reinvoke.adm.example.com", h, "/"+ns, ns)
			hook.NamespaceSelector = spec.MatchConstraints.NamespaceSelector
			hook.ReinvocationPolicy = ptr.To(tc.webhookPolicy)
			installMutating(t, client, ns, h, hook)

			got, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subject"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if !maps.Equal(got.Data, tc.wantData) {
				t.Errorf("data %v, want %v", got.Data, tc.wantData)
			}
			calls := h.seen("/"+ns, "subject")
			if len(calls) != tc.wantCalls {
				t.Fatalf("the webhook was called %d times, want %d", len(calls), tc.wantCalls)
			}
			// A reinvoked webhook sees the policy's change of the
			// second pass.
			if tc.wantCalls == 2 && !containsKey(calls[1].req.Object.Raw, `"policy-saw-webhook"`) {
				t.Errorf("the reinvoked webhook saw %s, want the policy's change", calls[1].req.Object.Raw)
			}
		})
	}
}

// containsKey says whether a JSON object's text has the quoted key (or
// value) in it.
func containsKey(raw []byte, quoted string) bool {
	return strings.Contains(string(raw), quoted)
}

// TestPolicyPatchForcesReinvocation: as upstream's policy dispatcher, a
// MutatingAdmissionPolicy that applied a patch on the first pass makes
// the mutating chain run a second pass, in which the IfNeeded policies
// called so far run again, itself included, even when nothing else
// changed the object (Kite reinvoked only after a change by a later
// one). The policy appends "x" to data "trail" on every call, so the
// stored trail counts its calls.
func TestPolicyPatchForcesReinvocation(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	trail := applyConfiguration(`Object{data: {"trail": (has(object.data) && 'trail' in object.data ? object.data.trail : "") + "x"}}`)
	for _, tc := range []struct {
		name string
		// policies run in name order.
		policies  map[string]admissionregistrationv1.MutatingAdmissionPolicySpec
		wantTrail string
	}{
		{
			name:      "an IfNeeded policy that patched runs again on the second pass",
			policies:  map[string]admissionregistrationv1.MutatingAdmissionPolicySpec{"a": {ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy, Mutations: []admissionregistrationv1.Mutation{trail}}},
			wantTrail: "xx",
		},
		{
			name:      "a Never policy runs once",
			policies:  map[string]admissionregistrationv1.MutatingAdmissionPolicySpec{"a": {ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy, Mutations: []admissionregistrationv1.Mutation{trail}}},
			wantTrail: "x",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := policyNamespace(t, client, nil)
			for suffix, spec := range tc.policies {
				name := ns + "-" + suffix
				spec.MatchConstraints = configMapsIn(client, t, ns)
				installMutatingPolicy(t, client, &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec},
					&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-binding"},
						Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name}})
			}
			got, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subject"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if got.Data["trail"] != tc.wantTrail {
				t.Errorf("trail %q, want %q", got.Data["trail"], tc.wantTrail)
			}
		})
	}
}
