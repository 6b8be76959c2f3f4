package deployment

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestResolveFenceposts(t *testing.T) {
	tests := []struct {
		surge, unavailable string
		desired            int32
		wantSurge, wantU   int32
	}{
		{"25%", "25%", 10, 3, 2}, // surge rounds up, unavailable down
		{"25%", "25%", 1, 1, 0},
		{"25%", "25%", 4, 1, 1},
		{"0", "0", 5, 0, 1}, // both 0: one may be unavailable
		{"0%", "10%", 5, 0, 1},
		{"2", "1", 3, 2, 1},
		{"100%", "0", 3, 3, 0},
		{"50%", "50%", 0, 0, 1},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%s of %d", tc.surge, tc.unavailable, tc.desired), func(t *testing.T) {
			s, u := intstr.Parse(tc.surge), intstr.Parse(tc.unavailable)
			gotS, gotU, err := ResolveFenceposts(&s, &u, tc.desired)
			if err != nil || gotS != tc.wantSurge || gotU != tc.wantU {
				t.Fatalf("= %d, %d, %v; want %d, %d", gotS, gotU, err, tc.wantSurge, tc.wantU)
			}
		})
	}
}

func dep(replicas int32, surge, unavailable string) *appsv1.Deployment {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas),
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}}}
}

func rs(name string, age time.Duration, spec, available int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age))},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(spec)}, Status: appsv1.ReplicaSetStatus{Replicas: spec, AvailableReplicas: available, ReadyReplicas: available}}
}

func TestNewRSNewReplicas(t *testing.T) {
	tests := []struct {
		name     string
		d        *appsv1.Deployment
		old, new int32
		want     int32
	}{
		{"first rollout within surge", dep(10, "25%", "25%"), 0, 0, 10},
		{"surge room of 3 above 10 old", dep(10, "25%", "25%"), 10, 0, 3},
		{"no room left", dep(10, "25%", "25%"), 10, 3, 3},
		{"never above replicas", dep(3, "100%", "0"), 1, 2, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := rs("new", 0, tc.new, 0)
			got := NewRSNewReplicas(tc.d, []*appsv1.ReplicaSet{rs("old", time.Hour, tc.old, tc.old), n}, n)
			if got != tc.want {
				t.Fatalf("= %d, want %d", got, tc.want)
			}
		})
	}
	recreate := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4), Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}}
	if got := NewRSNewReplicas(recreate, nil, rs("n", 0, 0, 0)); got != 4 {
		t.Errorf("Recreate: %d, want 4", got)
	}
}

func TestScaleDownOld(t *testing.T) {
	tests := []struct {
		name string
		d    *appsv1.Deployment
		old  []*appsv1.ReplicaSet
		new  *appsv1.ReplicaSet
		want map[string]int32
	}{
		{"new not available yet: old keeps minAvailable", dep(10, "25%", "25%"), []*appsv1.ReplicaSet{rs("old", time.Hour, 10, 10)}, rs("new", 0, 3, 0),
			map[string]int32{"old": 8}},
		{"new available: old shrinks by what is available above the minimum", dep(10, "25%", "25%"), []*appsv1.ReplicaSet{rs("old", time.Hour, 8, 8)}, rs("new", 0, 5, 5),
			map[string]int32{"old": 3}},
		{"unhealthy old pods go first, oldest set first", dep(4, "1", "0"),
			[]*appsv1.ReplicaSet{rs("older", 2*time.Hour, 2, 0), rs("old", time.Hour, 3, 3)}, rs("new", 0, 1, 1),
			map[string]int32{"older": 0}}, // then 4 available = the minimum: "old" stays
		{"no old pods", dep(3, "1", "0"), nil, rs("new", 0, 3, 3), map[string]int32{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ScaleDownOld(tc.d, tc.old, tc.new)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestToCleanKeepsHistoryLimit(t *testing.T) {
	d := dep(1, "1", "0")
	d.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	withRev := func(r *appsv1.ReplicaSet, rev string) *appsv1.ReplicaSet {
		r.Annotations = map[string]string{RevisionAnnotation: rev}
		return r
	}
	old := []*appsv1.ReplicaSet{withRev(rs("r3", time.Hour, 0, 0), "3"), withRev(rs("r1", 3*time.Hour, 0, 0), "1"),
		withRev(rs("r2", 2*time.Hour, 1, 1), "2")}
	var got []string
	for _, r := range ToClean(d, old) {
		got = append(got, r.Name)
	}
	// r1 and r2 are beyond the limit; r2 still has a pod and stays.
	if diff := cmp.Diff([]string{"r1"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestProportionalSizes(t *testing.T) {
	withMax := func(r *appsv1.ReplicaSet, m string) *appsv1.ReplicaSet {
		r.Annotations = map[string]string{MaxReplicasAnnotation: m}
		return r
	}
	tests := []struct {
		name string
		d    *appsv1.Deployment
		new  *appsv1.ReplicaSet
		old  []*appsv1.ReplicaSet
		want map[string]int32
	}{
		{"a lone active set takes all", dep(5, "1", "0"), rs("new", 0, 3, 3), nil, map[string]int32{"new": 5}},
		// 13 to add to 12 pods: 6 each, the leftover to the newer.
		{"mid-rollout 10 -> 20 keeps the 6:6 proportion (max-replicas 13, surge 5)", dep(20, "25%", "25%"),
			withMax(rs("new", 0, 6, 0), "13"), []*appsv1.ReplicaSet{withMax(rs("old", time.Hour, 6, 6), "13")},
			map[string]int32{"new": 13, "old": 12}},
		// 7 to remove: the older takes its share (4) first, the newer the rest.
		{"scaling down: the older set takes its share first", dep(4, "1", "0"),
			withMax(rs("new", 0, 6, 0), "13"), []*appsv1.ReplicaSet{withMax(rs("old", time.Hour, 6, 6), "13")},
			map[string]int32{"new": 3, "old": 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ProportionalSizes(tc.d, tc.new, tc.old)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRolloutStatusConditions(t *testing.T) {
	now := time.Unix(2e9, 0)
	d := dep(2, "1", "0")
	d.Generation = 3
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	newRS := rs("d-1", 0, 2, 2)
	s := RolloutStatus(d, Status(d, []*appsv1.ReplicaSet{newRS}, newRS, now), newRS, now)
	p := Condition(&s, appsv1.DeploymentProgressing)
	a := Condition(&s, appsv1.DeploymentAvailable)
	if p == nil || p.Reason != ReasonNewRSAvailable || p.Message != `ReplicaSet "d-1" has successfully progressed.` || a == nil || a.Status != corev1.ConditionTrue || s.ObservedGeneration != 3 {
		t.Errorf("complete rollout: %+v", s)
	}
	// A rollout with no progress past its deadline times out.
	d.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: ReasonRSUpdated, LastUpdateTime: metav1.NewTime(now.Add(-11 * time.Minute))}}}
	stuck := rs("d-2", 0, 1, 0)
	s = RolloutStatus(d, Status(d, []*appsv1.ReplicaSet{rs("d-1", time.Hour, 1, 1), stuck}, stuck, now), stuck, now)
	if p := Condition(&s, appsv1.DeploymentProgressing); p == nil || p.Reason != ReasonTimedOut || p.Status != corev1.ConditionFalse {
		t.Errorf("stuck rollout: %+v", p)
	}
}

func TestComputeHashIsStableAndMovesWithCollisions(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	a, b := ComputeHash(tmpl, nil), ComputeHash(tmpl.DeepCopy(), nil)
	if a != b || a == ComputeHash(tmpl, ptr.To[int32](1)) || len(a) == 0 {
		t.Errorf("hashes %q %q %q", a, b, ComputeHash(tmpl, ptr.To[int32](1)))
	}
}

// TestTerminatingReplicas is upstream's
// TestGetReplicaCountForReplicaSets's terminating cases.
func TestTerminatingReplicas(t *testing.T) {
	set := func(observed int64, terminating *int32) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{Status: appsv1.ReplicaSetStatus{ObservedGeneration: observed, TerminatingReplicas: terminating}}
	}
	scalingDown := set(1, ptr.To[int32](3))
	notYetObserved := set(0, ptr.To[int32](1)) // counted: it says
	unsynced := set(0, nil)
	dropped := set(1, nil) // synced by a controller that does not report them
	for _, c := range []struct {
		name string
		sets []*appsv1.ReplicaSet
		want *int32
	}{
		{"one scaling down", []*appsv1.ReplicaSet{scalingDown}, ptr.To[int32](3)},
		{"two scaling down", []*appsv1.ReplicaSet{scalingDown, notYetObserved}, ptr.To[int32](4)},
		{"a new one not synced yet", []*appsv1.ReplicaSet{unsynced}, ptr.To[int32](0)},
		{"scaling down and a new one", []*appsv1.ReplicaSet{scalingDown, notYetObserved, unsynced, nil}, ptr.To[int32](4)},
		{"unknown", []*appsv1.ReplicaSet{dropped}, nil},
		{"unknown among known", []*appsv1.ReplicaSet{scalingDown, notYetObserved, unsynced, dropped}, nil},
		{"none", nil, ptr.To[int32](0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := TerminatingReplicas(c.sets); !ptr.Equal(got, c.want) {
				t.Errorf("TerminatingReplicas = %v, want %v", ptr.Deref(got, -1), ptr.Deref(c.want, -1))
			}
		})
	}
}
