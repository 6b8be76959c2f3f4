package protection

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestReleaseClaim(t *testing.T) {
	deleting := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", UID: "c1",
		DeletionTimestamp: &metav1.Time{}, Finalizers: []string{PVCFinalizer}}}
	pod := func(node string, modify ...func(*v1.Pod)) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p1"}, Spec: v1.PodSpec{NodeName: node,
			Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
		for _, m := range modify {
			m(p)
		}
		return p
	}
	ephemeral := func(p *v1.Pod) {
		p.Name = "p"
		p.Spec.Volumes = []v1.Volume{{Name: "eph", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}
	}
	ephClaim := deleting.DeepCopy()
	ephClaim.Name = "p-eph"
	ephClaim.OwnerReferences = []metav1.OwnerReference{{UID: "p1", Controller: ptr.To(true)}}
	for _, tc := range []struct {
		name  string
		claim *v1.PersistentVolumeClaim
		pods  []*v1.Pod
		want  bool
	}{
		{"a deleted claim no pod uses loses its finalizer", deleting, nil, true},
		{"a scheduled pod that uses it keeps it", deleting, []*v1.Pod{pod("n1")}, false},
		{"a terminated pod still keeps it until it is gone", deleting, []*v1.Pod{pod("n1", func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded })}, false},
		{"a pod not scheduled does not keep it", deleting, []*v1.Pod{pod("")}, true},
		{"a pod of another namespace does not keep it", deleting, []*v1.Pod{pod("n1", func(p *v1.Pod) { p.Namespace = "other" })}, true},
		{"a claim not deleted keeps its finalizer", &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns", Finalizers: []string{PVCFinalizer}}}, nil, false},
		{"a pod's ephemeral claim is kept while the pod runs", ephClaim, []*v1.Pod{pod("n1", ephemeral)}, false},
		{"an ephemeral claim is let go once its pod is shut down", ephClaim, []*v1.Pod{pod("n1", ephemeral, func(p *v1.Pod) {
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &metav1.Time{}, ptr.To(int64(0))
		})}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReleaseClaim(tc.claim, tc.pods); got != tc.want {
				t.Fatalf("ReleaseClaim = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReleaseVolume(t *testing.T) {
	pv := func(phase v1.PersistentVolumePhase, deleted bool) *v1.PersistentVolume {
		p := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "v", Finalizers: []string{PVFinalizer}}, Status: v1.PersistentVolumeStatus{Phase: phase}}
		if deleted {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pv   *v1.PersistentVolume
		want bool
	}{
		{"a deleted Bound volume keeps its finalizer", pv(v1.VolumeBound, true), false},
		{"a deleted Released volume loses it", pv(v1.VolumeReleased, true), true},
		{"a deleted Available volume loses it", pv(v1.VolumeAvailable, true), true},
		{"a volume not deleted keeps it", pv(v1.VolumeAvailable, false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ReleaseVolume(tc.pv); got != tc.want {
				t.Fatalf("ReleaseVolume = %v, want %v", got, tc.want)
			}
		})
	}
}
