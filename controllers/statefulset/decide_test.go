package statefulset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/apps/defaults"
)

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func set(replicas int32, mutate ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Generation: 3},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas)}}
	defaults.StatefulSet(s)
	for _, m := range mutate {
		m(s)
	}
	return s
}

type podState int

const (
	ready podState = iota
	pending
	failed
	terminating
)

func pod(ordinal int, state podState, rev string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", ordinal), Namespace: "ns", UID: "u",
		Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: rev}}}
	switch state {
	case ready, terminating:
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
		if state == terminating {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(now))
		}
	case pending:
		p.Status.Phase = corev1.PodPending
	case failed:
		p.Status.Phase = corev1.PodFailed
	}
	return p
}

// summary is a plan's actions as "Create web-1@rev" and "Delete web-2".
func summary(p Plan) []string {
	var out []string
	for _, a := range p.Actions {
		s := fmt.Sprintf("%s web-%d", a.Type, a.Ordinal)
		if a.Type == Create {
			s += "@" + a.Revision
		}
		if a.Condemned {
			s += " (scale down)"
		}
		out = append(out, s)
	}
	return out
}

func TestDecide(t *testing.T) {
	parallel := func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }
	partition := func(n int32) func(*appsv1.StatefulSet) {
		return func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(n) }
	}
	tests := []struct {
		name    string
		set     *appsv1.StatefulSet
		pods    []*corev1.Pod
		current string
		want    []string
	}{
		{"ordered: the first pod alone", set(3), nil, "r1", []string{"Create web-0@r1"}},
		{"ordered: waits for web-0 to be ready", set(3), []*corev1.Pod{pod(0, pending, "r1")}, "r1", nil},
		{"ordered: next once web-0 is ready", set(3), []*corev1.Pod{pod(0, ready, "r1")}, "r1", []string{"Create web-1@r1"}},
		{"ordered: a gap is filled first", set(3), []*corev1.Pod{pod(1, ready, "r1"), pod(2, ready, "r1")}, "r1", []string{"Create web-0@r1"}},
		{"parallel: all at once", set(3, parallel), []*corev1.Pod{pod(1, pending, "r1")}, "r1", []string{"Create web-0@r1", "Create web-2@r1"}},
		{"ordinals start at spec.ordinals.start", set(2, func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5} }),
			[]*corev1.Pod{pod(5, ready, "r1")}, "r1", []string{"Create web-6@r1"}},
		{"a failed pod is deleted, to be made again", set(2), []*corev1.Pod{pod(0, failed, "r1"), pod(1, ready, "r1")}, "r1", []string{"Delete web-0"}},
		{"a terminating pod is waited for", set(2), []*corev1.Pod{pod(0, terminating, "r1")}, "r1", nil},
		{"ordered scale down: highest ordinal first, one at a time", set(2), []*corev1.Pod{pod(0, ready, "r1"), pod(1, ready, "r1"), pod(2, ready, "r1"), pod(3, ready, "r1")},
			"r1", []string{"Delete web-3 (scale down)"}},
		{"ordered scale down waits for an unhealthy replica", set(2), []*corev1.Pod{pod(0, pending, "r1"), pod(1, ready, "r1"), pod(2, ready, "r1")}, "r1", nil},
		{"ordered scale down deletes an unhealthy condemned pod", set(1), []*corev1.Pod{pod(0, ready, "r1"), pod(1, ready, "r1"), pod(2, pending, "r1")},
			"r1", []string{"Delete web-2 (scale down)"}},
		{"parallel scale down: all condemned at once", set(1, parallel), []*corev1.Pod{pod(0, ready, "r1"), pod(1, ready, "r1"), pod(2, ready, "r1")},
			"r1", []string{"Delete web-2 (scale down)", "Delete web-1 (scale down)"}},
		{"rolling update: highest ordinal first", set(3), []*corev1.Pod{pod(0, ready, "r1"), pod(1, ready, "r1"), pod(2, ready, "r1")}, "r1", []string{"Delete web-2"}},
		{"rolling update: one unavailable at a time", set(3), []*corev1.Pod{pod(0, ready, "r1"), pod(1, ready, "r1"), pod(2, pending, "r2")}, "r1", nil},
		{"rolling update: then the next", set(3), []*corev1.Pod{pod(0, ready, "r1"), pod(1, ready, "r1"), pod(2, ready, "r2")}, "r1", []string{"Delete web-1"}},
		{"rolling update: maxUnavailable 2", set(3, func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		}), []*corev1.Pod{pod(0, ready, "r1"), pod(1, ready, "r1"), pod(2, ready, "r1")}, "r1", []string{"Delete web-2", "Delete web-1"}},
		{"rolling update: stops at the partition", set(3, partition(2)), []*corev1.Pod{pod(0, ready, "r1"), pod(1, ready, "r1"), pod(2, ready, "r2")}, "r1", nil},
		{"a missing pod below the partition is made at the current revision", set(3, partition(2)), []*corev1.Pod{pod(1, ready, "r1"), pod(2, ready, "r2")},
			"r1", []string{"Create web-0@r1"}},
		{"a missing pod above the partition is made at the update revision", set(3, partition(1)), []*corev1.Pod{pod(0, ready, "r1"), pod(1, ready, "r1")},
			"r1", []string{"Create web-2@r2"}},
		{"OnDelete: old pods stay", set(2, func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
		}), []*corev1.Pod{pod(0, ready, "r1"), pod(1, ready, "r1")}, "r1", nil},
		{"a set being deleted does nothing", set(3, func(s *appsv1.StatefulSet) { s.DeletionTimestamp = ptr.To(metav1.NewTime(now)) }), nil, "r1", nil},
		{"pods of other names are not members", set(1), []*corev1.Pod{pod(0, ready, "r2"), {ObjectMeta: metav1.ObjectMeta{Name: "web-x"}}}, "r2", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Cases about rollouts update to r2; the others are at rest
			// (update = current).
			update := tc.current
			if strings.Contains(tc.name, "rolling update") || strings.Contains(tc.name, "partition") || strings.Contains(tc.name, "OnDelete") {
				update = "r2"
			}
			got := summary(Decide(Input{Set: tc.set, Pods: tc.pods, CurrentRevision: tc.current, UpdateRevision: update, Now: now}))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideWaitsForMinReadySeconds(t *testing.T) {
	s := set(2, func(s *appsv1.StatefulSet) { s.Spec.MinReadySeconds = 7200 })
	plan := Decide(Input{Set: s, Pods: []*corev1.Pod{pod(0, ready, "r")}, CurrentRevision: "r", UpdateRevision: "r", Now: now})
	if len(plan.Actions) != 0 || plan.Wait != time.Hour {
		t.Errorf("actions %v wait %v, want none and 1h", summary(plan), plan.Wait)
	}
	if plan.Status.ReadyReplicas != 1 || plan.Status.AvailableReplicas != 0 {
		t.Errorf("status %+v", plan.Status)
	}
}

func TestDecideStatus(t *testing.T) {
	tests := []struct {
		name string
		pods []*corev1.Pod
		want appsv1.StatefulSetStatus
	}{
		{"mid-rollout", []*corev1.Pod{pod(0, ready, "r1"), pod(1, pending, "r2"), pod(2, terminating, "r1")},
			appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 3, ReadyReplicas: 1, AvailableReplicas: 1, CurrentReplicas: 1, UpdatedReplicas: 1,
				CurrentRevision: "r1", UpdateRevision: "r2"}},
		{"complete: the update revision becomes current", []*corev1.Pod{pod(0, ready, "r2"), pod(1, ready, "r2"), pod(2, ready, "r2")},
			appsv1.StatefulSetStatus{ObservedGeneration: 3, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, CurrentReplicas: 3, UpdatedReplicas: 3,
				CurrentRevision: "r2", UpdateRevision: "r2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(Input{Set: set(3), Pods: tc.pods, CurrentRevision: "r1", UpdateRevision: "r2", Now: now}).Status
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewPodIdentityAndStorage(t *testing.T) {
	s := set(3, func(s *appsv1.StatefulSet) {
		s.UID = "uid"
		s.Spec.ServiceName = "nginx"
		s.Spec.Template.Labels = map[string]string{"app": "web"}
		s.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "cfg", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
		s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	})
	p := NewPod(s, 2, "web-abc")
	if p.Name != "web-2" || p.Spec.Hostname != "web-2" || p.Spec.Subdomain != "nginx" {
		t.Errorf("identity: name %q hostname %q subdomain %q", p.Name, p.Spec.Hostname, p.Spec.Subdomain)
	}
	wantLabels := map[string]string{"app": "web", appsv1.StatefulSetPodNameLabel: "web-2", appsv1.PodIndexLabel: "2", appsv1.ControllerRevisionHashLabelKey: "web-abc"}
	if diff := cmp.Diff(wantLabels, p.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if len(p.Spec.Volumes) != 2 || p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-2" || p.Spec.Volumes[1].Name != "cfg" {
		t.Errorf("volumes: %+v", p.Spec.Volumes)
	}
	c := NewClaim(s, &s.Spec.VolumeClaimTemplates[0], 2)
	if c.Name != "data-web-2" || c.Labels["app"] != "web" || len(c.OwnerReferences) != 0 {
		t.Errorf("claim with Retain: %+v", c.ObjectMeta)
	}
	s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	if c := NewClaim(s, &s.Spec.VolumeClaimTemplates[0], 2); len(c.OwnerReferences) != 1 || c.OwnerReferences[0].UID != "uid" {
		t.Errorf("claim with whenDeleted Delete: owners %+v", c.OwnerReferences)
	}
}

func TestRevisionRoundTrip(t *testing.T) {
	s := set(1, func(s *appsv1.StatefulSet) {
		s.Spec.Template.Labels = map[string]string{"app": "web"}
		s.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "nginx:1"}}
	})
	rev, err := NewRevision(s, 1, ptr.To[int32](0))
	if err != nil {
		t.Fatal(err)
	}
	if rev.Name != "web-"+rev.Labels[appsv1.ControllerRevisionHashLabelKey] || rev.Labels["app"] != "web" {
		t.Errorf("revision meta %+v", rev.ObjectMeta)
	}
	other, _ := NewRevision(s, 1, ptr.To[int32](1))
	if other.Name == rev.Name {
		t.Errorf("a collision count does not change the name: %s", rev.Name)
	}
	changed := s.DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	back, err := ApplyRevision(changed, rev)
	if err != nil {
		t.Fatal(err)
	}
	if img := back.Spec.Template.Spec.Containers[0].Image; img != "nginx:1" {
		t.Errorf("applied revision has image %q, want nginx:1", img)
	}
}

func TestOrdinal(t *testing.T) {
	for name, want := range map[string]int{"web-0": 0, "web-12": 12, "web-01": -1, "web-": -1, "web-x": -1, "webx-1": -1, "web-web-1": -1, "web--1": -1} {
		if got := Ordinal("web", name); got != want {
			t.Errorf("Ordinal(web, %q) = %d, want %d", name, got, want)
		}
	}
}

// TestDecideNamesEachActionsStep: a Parallel plan tells the runner which
// of upstream's passes made each action, so that it finishes the
// replicas before the condemned pods and those before the rolling update.
func TestDecideNamesEachActionsStep(t *testing.T) {
	s := set(2, func(s *appsv1.StatefulSet) {
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	})
	plan := Decide(Input{Set: s, Pods: []*corev1.Pod{pod(1, ready, "r1"), pod(2, ready, "r1")},
		CurrentRevision: "r1", UpdateRevision: "r2", Now: now})
	var got []string
	for _, a := range plan.Actions {
		got = append(got, fmt.Sprintf("%s web-%d step %d", a.Type, a.Ordinal, a.Step))
	}
	want := []string{"Create web-0 step 0", "Delete web-2 step 1", "Delete web-1 step 2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}
