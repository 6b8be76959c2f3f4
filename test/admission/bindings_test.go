package admission_test

import (
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestBindingsAreAdmittedAsUpstream posts a Binding both ways under two
// policies, one matching the resource "bindings" and one matching the
// subresource "pods/binding", each denying with the attributes it saw:
// as kube-apiserver's, a POST to core bindings is resource bindings with
// no subresource (only the first policy sees it) and a POST to
// pods/<name>/binding is resource pods, subresource binding (only the
// second); both are of kind Binding.
func TestBindingsAreAdmittedAsUpstream(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := policyNamespace(t, client, nil)
	n, err := client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods(ns).Create(t.Context(), plainPod("p", nil, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, resource := range []string{"bindings", "pods/binding"} {
		name := "deny-" + strings.ReplaceAll(resource, "/", "-") + "-" + n.Labels["policy-test"]
		installValidatingPolicy(t, client, &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"policy-test": n.Labels["policy-test"]}},
					ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
					}}},
				},
				Validations: []admissionregistrationv1.Validation{{
					Expression: "false",
					MessageExpression: fmt.Sprintf(`%q + ' saw ' + request.resource.resource + '/' + (has(request.subResource) ? request.subResource : '') + ' kind ' + request.kind.kind + ' name ' + request.name`,
						"matching "+resource),
				}},
			},
		}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		})
	}
	binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: v1.ObjectReference{Kind: "Node", Name: "node-a"}}
	for _, tc := range []struct {
		name string
		post func() error
		want string
	}{{
		name: "POST bindings is the resource bindings",
		post: func() error {
			return client.CoreV1().RESTClient().Post().Namespace(ns).Resource("bindings").Body(binding).Do(t.Context()).Error()
		},
		want: "matching bindings saw bindings/ kind Binding name p",
	}, {
		name: "POST pods/binding is the subresource binding of pods",
		post: func() error { return client.CoreV1().Pods(ns).Bind(t.Context(), binding, metav1.CreateOptions{}) },
		want: "matching pods/binding saw pods/binding kind Binding name p",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.post()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want the denial %q (and no other)", err, tc.want)
			}
			if strings.Count(err.Error(), " saw ") != 1 {
				t.Errorf("got %v, want one policy's denial", err)
			}
		})
	}
	// Neither bound the pod.
	p, err := client.CoreV1().Pods(ns).Get(t.Context(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" {
		t.Errorf("pod bound to %q through a denied binding", p.Spec.NodeName)
	}
}
