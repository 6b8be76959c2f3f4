package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateNamespace(t *testing.T) {
	cases := []struct {
		name string
		ns   corev1.Namespace
		want []want
	}{
		{"valid", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}}, nil},
		{"name must be a DNS label", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team.a"}},
			[]want{{field.ErrorTypeInvalid, "metadata.name"}}},
		{"name required", corev1.Namespace{}, []want{{field.ErrorTypeRequired, "metadata.name"}}},
		{"namespace of a namespace forbidden", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "b"}},
			[]want{{field.ErrorTypeForbidden, "metadata.namespace"}}},
		{"unqualified finalizer", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"mine"}}},
			[]want{{field.ErrorTypeInvalid, "spec.finalizers"}}},
		{"qualified finalizer", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/mine"}}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateNamespace(&tc.ns), tc.want...)
		})
	}
}

func TestValidateNamespaceStatusAndFinalize(t *testing.T) {
	now := metav1.Now()
	old := corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"}}
	cases := []struct {
		name     string
		finalize bool
		mutate   func(*corev1.Namespace)
		want     []want
	}{
		{"active without deletion", false, func(n *corev1.Namespace) { n.Status.Phase = corev1.NamespaceActive }, nil},
		{"terminating without deletion refused", false, func(n *corev1.Namespace) { n.Status.Phase = corev1.NamespaceTerminating },
			[]want{{field.ErrorTypeInvalid, "status.Phase"}}},
		{"active while deleting refused", false, func(n *corev1.Namespace) {
			n.DeletionTimestamp, n.Status.Phase = &now, corev1.NamespaceActive
		}, []want{{field.ErrorTypeInvalid, "status.Phase"}, {field.ErrorTypeInvalid, "metadata.deletionTimestamp"}}},
		{"finalize removes kubernetes", true, func(n *corev1.Namespace) { n.Spec.Finalizers = nil }, nil},
		{"finalize with bad name", true, func(n *corev1.Namespace) { n.Spec.Finalizers = []corev1.FinalizerName{"bad"} },
			[]want{{field.ErrorTypeInvalid, "spec.finalizers[0]"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := old.DeepCopy()
			tc.mutate(ns)
			if tc.finalize {
				checkErrors(t, ValidateNamespaceFinalizeUpdate(ns, &old), tc.want...)
			} else {
				checkErrors(t, ValidateNamespaceStatusUpdate(ns, &old), tc.want...)
			}
		})
	}
}
