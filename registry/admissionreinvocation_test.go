package registry_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kite-project/kite/registry"
)

// reinvocable is one webhook or policy of a fake plugin: it may change
// the ConfigMap (it says whether it did), may be IfNeeded, and may apply
// a patch (as a policy: whether or not the patch changes anything).
type reinvocable struct {
	key      string
	ifNeeded bool
	patches  bool
	mutate   func(cm *corev1.ConfigMap) bool
}

// fakeMutatingPlugin calls its reinvocables as the webhook and policy
// plugins do, writing down each call.
func fakeMutatingPlugin(name string, calls *[]string, rs ...reinvocable) registry.AdmissionPlugin {
	return registry.AdmissionPlugin{Name: name, Admit: func(_ context.Context, a admission.Attributes) error {
		r := registry.BeginReinvocations(a, name)
		defer r.End()
		patched := false
		for _, x := range rs {
			if r.Skip(x.key) {
				continue
			}
			*calls = append(*calls, x.key)
			changed := x.mutate != nil && x.mutate(a.GetObject().(*corev1.ConfigMap))
			r.Called(x.key, changed, x.ifNeeded)
			patched = patched || x.patches
		}
		if patched {
			r.Patched()
		}
		return nil
	}}
}

// setLabelOnce sets a label when absent, and then when the other label
// (if any) is there: a change on one call only.
func setLabelOnce(label, after string) func(cm *corev1.ConfigMap) bool {
	return func(cm *corev1.ConfigMap) bool {
		if _, ok := cm.Labels[label]; ok {
			return false
		}
		if _, ok := cm.Labels[after]; after != "" && !ok {
			return false
		}
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[label] = "set"
		return true
	}
}

// alwaysChange changes the label on every call.
func alwaysChange(label string) func(cm *corev1.ConfigMap) bool {
	return func(cm *corev1.ConfigMap) bool {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels[label] += "x"
		return true
	}
}

// TestChainReinvokesAsUpstream: the chain makes a second pass over all
// mutating plugins only when one asked for it, and in that pass a
// webhook or policy runs only when it is IfNeeded and something changed
// the object after it ran, as upstream's reinvoker and reinvoke contexts.
func TestChainReinvokesAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		name string
		// policies run before webhooks, as in the chain.
		policies, webhooks []reinvocable
		want               []string
	}{
		{
			name:     "nothing changed: one pass",
			policies: []reinvocable{{key: "p", ifNeeded: true}},
			webhooks: []reinvocable{{key: "w", ifNeeded: true}},
			want:     []string{"builtin", "p", "w"},
		},
		{
			name:     "a later webhook's change reinvokes an earlier IfNeeded one, and the built-in plugins run again",
			webhooks: []reinvocable{{key: "w1", ifNeeded: true}, {key: "w2", ifNeeded: true, mutate: setLabelOnce("w2", "")}},
			want:     []string{"builtin", "w1", "w2", "builtin", "w1"},
		},
		{
			name:     "a Never webhook is not reinvoked, but the second pass runs",
			webhooks: []reinvocable{{key: "w1"}, {key: "w2", mutate: setLabelOnce("w2", "")}},
			want:     []string{"builtin", "w1", "w2", "builtin"},
		},
		{
			name:     "a webhook's change reinvokes an IfNeeded policy",
			policies: []reinvocable{{key: "p", ifNeeded: true}},
			webhooks: []reinvocable{{key: "w", mutate: setLabelOnce("w", "")}},
			want:     []string{"builtin", "p", "w", "builtin", "p"},
		},
		{
			name:     "a reinvoked policy's change reinvokes an IfNeeded webhook",
			policies: []reinvocable{{key: "p", ifNeeded: true, mutate: setLabelOnce("p", "w")}},
			webhooks: []reinvocable{{key: "w", ifNeeded: true, mutate: setLabelOnce("w", "")}},
			want:     []string{"builtin", "p", "w", "builtin", "p", "w"},
		},
		{
			name:     "a reinvoked policy that changes nothing does not reinvoke the webhook",
			policies: []reinvocable{{key: "p", ifNeeded: true}},
			webhooks: []reinvocable{{key: "w", ifNeeded: true, mutate: setLabelOnce("w", "")}},
			want:     []string{"builtin", "p", "w", "builtin", "p"},
		},
		{
			name:     "a policy's patch that changes nothing forces the second pass, in which the IfNeeded policy runs again",
			policies: []reinvocable{{key: "p", ifNeeded: true, patches: true}},
			webhooks: []reinvocable{{key: "w", ifNeeded: true}},
			want:     []string{"builtin", "p", "w", "builtin", "p"},
		},
		{
			name:     "a Never policy's patch that changes nothing reinvokes an IfNeeded one before it",
			policies: []reinvocable{{key: "p1", ifNeeded: true}, {key: "p2", patches: true}},
			want:     []string{"builtin", "p1", "p2", "builtin", "p1"},
		},
		{
			name:     "a change on the second pass reinvokes the IfNeeded ones after it, and there is no third pass",
			webhooks: []reinvocable{{key: "w1", ifNeeded: true, mutate: setLabelOnce("w1", "w2")}, {key: "w2", ifNeeded: true, mutate: alwaysChange("w2")}},
			want:     []string{"builtin", "w1", "w2", "builtin", "w1", "w2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			chain := registry.Chain{
				{Name: "Builtin", Admit: func(context.Context, admission.Attributes) error { calls = append(calls, "builtin"); return nil }},
				fakeMutatingPlugin("MutatingAdmissionPolicy", &calls, tc.policies...),
				fakeMutatingPlugin("MutatingAdmissionWebhook", &calls, tc.webhooks...),
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}}
			a := admission.NewAttributesRecord(cm, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "ns", "cm",
				corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
			if err := chain.Admit(t.Context(), a); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(calls, tc.want) {
				t.Errorf("calls %v, want %v", calls, tc.want)
			}
		})
	}
}
