package replication

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A ReplicationController converted to a ReplicaSet and back is itself:
// what the ReplicaSet logic writes lands in the controller's fields.
func TestConversionRoundTrips(t *testing.T) {
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u", ResourceVersion: "7", Generation: 2, Labels: map[string]string{"app": "web"}},
		Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](3), MinReadySeconds: 5, Selector: map[string]string{"app": "web"},
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
		Status: corev1.ReplicationControllerStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 1, ObservedGeneration: 2,
			Conditions: []corev1.ReplicationControllerCondition{{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota"}}},
	}
	rs := ToReplicaSet(rc)
	if diff := cmp.Diff(map[string]string{"app": "web"}, rs.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if rs.UID != "u" || rs.ResourceVersion != "7" || *rs.Spec.Replicas != 3 || rs.Status.Conditions[0].Reason != "FailedCreate" {
		t.Errorf("converted ReplicaSet %+v", rs)
	}
	if diff := cmp.Diff(rc, FromReplicaSet(rs)); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
