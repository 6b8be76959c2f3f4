package policy

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
)

// BenchmarkEvaluateFiveValidations measures a ValidatingAdmissionPolicy
// with 5 validations evaluated on a ConfigMap create, without HTTP or
// storage: the versioned attributes, the CEL activation and the
// evaluation (test/admission's BenchmarkCreateThroughValidatingAdmissionPolicy
// is the request-level figure).
func BenchmarkEvaluateFiveValidations(b *testing.B) {
	var validations []admissionregistrationv1.Validation
	for i := range 5 {
		validations = append(validations, admissionregistrationv1.Validation{Expression: fmt.Sprintf("!has(object.data) || !('k%d' in object.data) || object.metadata.name.size() > %d", i, i)})
	}
	pol := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "bench", UID: "u", ResourceVersion: "1"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: validations}}
	v := compileValidator(pol)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{"policy-bench": "yes"}}}
	gvk, gvr := corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithResource("configmaps")
	t := &target{resource: gvr, kind: gvk}
	authz := allowAll{}
	for i := 0; b.Loop(); i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i), Namespace: "ns"}, Data: map[string]string{"k0": "v"}}
		a := admission.NewAttributesRecord(cm, nil, gvk, "ns", cm.Name, gvr, "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "admin"})
		va, err := versioned(b.Context(), a, t, true)
		if err != nil {
			b.Fatal(err)
		}
		decisions, _ := v.evaluate(b.Context(), t, va, nil, ns, authz)
		for _, d := range decisions {
			if d.deny {
				b.Fatalf("denied: %s", d.message)
			}
		}
	}
}
