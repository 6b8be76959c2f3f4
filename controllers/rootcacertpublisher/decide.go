package rootcacertpublisher

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Upstream's names (pkg/controller/certificates/rootcacertpublisher): pods
// mount ConfigMapName's Key through their service account token volume,
// and the conformance tests look for it by these names.
const (
	ConfigMapName         = "kube-root-ca.crt"
	Key                   = "ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Action is what Decide says to do with a namespace's ConfigMap.
type Action int

const (
	// Nothing: the ConfigMap is as it should be, or the namespace is
	// gone or going.
	Nothing Action = iota
	// Create the ConfigMap Decide returns.
	Create
	// Update the ConfigMap to the one Decide returns (the existing one,
	// its resourceVersion kept, so a concurrent write conflicts).
	Update
)

func (a Action) String() string {
	switch a {
	case Create:
		return "Create"
	case Update:
		return "Update"
	}
	return "Nothing"
}

// Decide is upstream's syncNamespace decision for one namespace: ns and
// cm are what the caches hold (nil when absent), ca the bundle to
// publish. It returns the action and the ConfigMap to write; it never
// changes cm. A namespace being deleted gets nothing: a create there
// would be refused, and its objects are on their way out.
func Decide(ns *v1.Namespace, cm *v1.ConfigMap, ca []byte) (Action, *v1.ConfigMap) {
	if ns == nil || ns.DeletionTimestamp != nil || ns.Status.Phase == v1.NamespaceTerminating {
		return Nothing, nil
	}
	data := map[string]string{Key: string(ca)}
	if cm == nil {
		return Create, &v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: ns.Name, Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data:       data,
		}
	}
	// As upstream: the data must be exactly the bundle (other keys go),
	// and the description only present, whatever it says; other
	// annotations, labels and binaryData are the user's.
	if maps.Equal(cm.Data, data) && cm.Annotations[DescriptionAnnotation] != "" {
		return Nothing, nil
	}
	out := cm.DeepCopy()
	out.Data = data
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[DescriptionAnnotation] = Description
	return Update, out
}
