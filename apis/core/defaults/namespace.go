package defaults

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Namespace applies upstream's namespace defaults: the
// kubernetes.io/metadata.name label always equals the name (a user cannot
// set it to anything else), and an empty phase is Active. A namespace
// without a name yet (generateName) gets no label, as upstream.
func Namespace(ns *corev1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// NamespaceForCreate is what upstream's namespace strategy does on create,
// on top of Namespace: the status is reset to Active and the `kubernetes`
// finalizer is added to spec.finalizers, so that the namespace controller
// empties the namespace before it goes. It is not defaulting because the
// finalizer is removed later in the namespace's life and must not come back
// on update.
func NamespaceForCreate(ns *corev1.Namespace) {
	Namespace(ns)
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
}
