package defaults

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// ReplicationController is upstream's SetDefaults_ReplicationController:
// an empty selector and empty labels come from the template's labels,
// replicas default to 1, and the template's pod spec gets a pod's
// defaults.
func ReplicationController(rc *corev1.ReplicationController) {
	if t := rc.Spec.Template; t != nil && t.Labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = t.Labels
		}
		if len(rc.Labels) == 0 {
			rc.Labels = t.Labels
		}
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
	if rc.Spec.Template != nil {
		PodSpec(&rc.Spec.Template.Spec)
	}
}

// PodTemplate gives a PodTemplate's pod spec a pod's defaults.
func PodTemplate(t *corev1.PodTemplate) { PodSpec(&t.Template.Spec) }
