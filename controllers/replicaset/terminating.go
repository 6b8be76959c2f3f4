package replicaset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kite-project/kite/controllers/controller"
)

// TerminatingReplicas is status.terminatingReplicas as upstream computes
// it (feature DeploymentReplicaSetTerminatingReplicas, on by default since
// 1.35): the pods rs controls that its selector matches, that are being
// deleted and have not finished (FilterTerminatingPods, then
// FilterClaimedPods). They are no longer replicas (a replacement is made
// at once) but still run.
func TerminatingReplicas(rs *appsv1.ReplicaSet, sel labels.Selector, pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if controller.Terminating(p) && metav1.IsControlledBy(p, rs) && sel.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}
