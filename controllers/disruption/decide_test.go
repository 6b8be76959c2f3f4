package disruption

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

func pod(name string, ready bool, owner types.UID) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: string(owner), UID: owner, Controller: ptr.To(true)}}
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

func budget(minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Generation: 1},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: minAvailable, MaxUnavailable: maxUnavailable}}
}

// scales finds the scale of a ReplicaSet by uid: rs-a and rs-b both
// belong to Deployment d (4 replicas), rs-c stands alone (3).
func scales(_ string, ref *metav1.OwnerReference) (*Scale, error) {
	switch ref.UID {
	case "rs-a", "rs-b":
		return &Scale{UID: "d", Replicas: 4}, nil
	case "rs-c":
		return &Scale{UID: "rs-c", Replicas: 3}, nil
	case "broken":
		return nil, errors.New("scale unavailable")
	}
	return nil, nil
}

func TestExpectedCount(t *testing.T) {
	three := []*corev1.Pod{pod("a", true, "rs-a"), pod("b", true, "rs-b"), pod("c", true, "rs-c")}
	tests := []struct {
		name                  string
		budget                *policyv1.PodDisruptionBudget
		pods                  []*corev1.Pod
		wantExpected, wantDes int32
		wantUnmanaged         []string
		wantErr               string
	}{
		{"integer minAvailable counts the pods", budget(ptr.To(intstr.FromInt32(2)), nil), three, 3, 2, nil, ""},
		{"integer minAvailable ignores controllers", budget(ptr.To(intstr.FromInt32(1)), nil), []*corev1.Pod{pod("x", true, "")}, 1, 1, nil, ""},
		{"percent minAvailable counts the controllers' replicas once each, rounding up", budget(ptr.To(intstr.FromString("50%")), nil), three, 7, 4, nil, ""},
		{"integer maxUnavailable", budget(nil, ptr.To(intstr.FromInt32(2))), three, 7, 5, nil, ""},
		{"percent maxUnavailable rounds up", budget(nil, ptr.To(intstr.FromString("30%"))), three, 7, 4, nil, ""},
		{"maxUnavailable over the scale leaves no one desired", budget(nil, ptr.To(intstr.FromInt32(10))), three, 7, 0, nil, ""},
		{"unmanaged pods are reported, not counted", budget(nil, ptr.To(intstr.FromInt32(1))), []*corev1.Pod{pod("x", true, ""), pod("c", true, "rs-c")}, 3, 2, []string{"x"}, ""},
		{"a controller not found is an error", budget(nil, ptr.To(intstr.FromInt32(1))), []*corev1.Pod{pod("g", true, "gone")}, 0, 0, nil, `found no controllers for pod "g"`},
		{"a scale that cannot be read is an error", budget(ptr.To(intstr.FromString("50%")), nil), []*corev1.Pod{pod("g", true, "broken")}, 0, 0, nil, "scale unavailable"},
		{"neither set: nothing expected", budget(nil, nil), three, 0, 0, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			expected, desired, unmanaged, err := ExpectedCount(tc.budget, tc.pods, scales)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if expected != tc.wantExpected || desired != tc.wantDes {
				t.Errorf("expected %d desired %d, want %d and %d", expected, desired, tc.wantExpected, tc.wantDes)
			}
			if diff := cmp.Diff(tc.wantUnmanaged, unmanaged); diff != "" {
				t.Errorf("unmanaged (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDisruptedPodsAndCurrentHealthy(t *testing.T) {
	recent := metav1.NewTime(now.Add(-30 * time.Second))
	old := metav1.NewTime(now.Add(-3 * time.Minute))
	deleting := pod("deleting", true, "")
	deleting.DeletionTimestamp = &recent
	pods := []*corev1.Pod{pod("evicted", true, ""), pod("expired", true, ""), deleting, pod("ready", true, ""), pod("unready", false, "")}
	b := budget(ptr.To(intstr.FromInt32(1)), nil)
	b.Status.DisruptedPods = map[string]metav1.Time{"evicted": recent, "expired": old, "deleting": recent, "gone": recent}

	disrupted, recheck := DisruptedPods(b, pods, now)
	if diff := cmp.Diff(map[string]metav1.Time{"evicted": recent}, disrupted); diff != "" {
		t.Errorf("disrupted pods (-want +got):\n%s", diff)
	}
	if want := recent.Add(DeletionTimeout); recheck == nil || !recheck.Equal(want) {
		t.Errorf("recheck at %v, want %v", recheck, want)
	}
	// ready and expired (its eviction never happened) count; evicted is
	// going, deleting is gone, unready is not healthy.
	if got := CurrentHealthy(pods, disrupted, now); got != 2 {
		t.Errorf("current healthy %d, want 2", got)
	}
	if _, recheck := DisruptedPods(budget(nil, nil), pods, now); recheck != nil {
		t.Errorf("a budget without disrupted pods rechecks at %v", recheck)
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		name                     string
		healthy, desired, expect int32
		wantAllowed              int32
		wantStatus               metav1.ConditionStatus
		wantReason               string
	}{
		{"spare healthy pods allow disruptions", 3, 1, 3, 2, metav1.ConditionTrue, policyv1.SufficientPodsReason},
		{"exactly the desired allows none", 2, 2, 3, 0, metav1.ConditionFalse, policyv1.InsufficientPodsReason},
		{"fewer than desired allows none", 1, 2, 3, 0, metav1.ConditionFalse, policyv1.InsufficientPodsReason},
		{"no expected pods allows none", 2, 0, 0, 0, metav1.ConditionFalse, policyv1.InsufficientPodsReason},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := budget(ptr.To(intstr.FromInt32(1)), nil)
			got := Status(b, tc.healthy, tc.desired, tc.expect, map[string]metav1.Time{})
			if got == nil {
				t.Fatal("no status change for a budget never synced")
			}
			s := got.Status
			if s.DisruptionsAllowed != tc.wantAllowed || s.CurrentHealthy != tc.healthy || s.DesiredHealthy != tc.desired || s.ExpectedPods != tc.expect || s.ObservedGeneration != 1 {
				t.Errorf("status %+v", s)
			}
			c := apimeta.FindStatusCondition(s.Conditions, policyv1.DisruptionAllowedCondition)
			if c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason || c.ObservedGeneration != 1 {
				t.Errorf("condition %+v, want %s %s", c, tc.wantStatus, tc.wantReason)
			}
			if again := Status(got, tc.healthy, tc.desired, tc.expect, map[string]metav1.Time{}); again != nil {
				t.Errorf("an up-to-date status is written again: %+v", again.Status)
			}
		})
	}
}

func TestFailSafe(t *testing.T) {
	b := budget(ptr.To(intstr.FromString("50%")), nil)
	b.Status = policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 3, ObservedGeneration: 1}
	got := FailSafe(b, errors.New(`found no controllers for pod "x"`))
	c := apimeta.FindStatusCondition(got.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if got.Status.DisruptionsAllowed != 0 || c == nil || c.Status != metav1.ConditionFalse || c.Reason != policyv1.SyncFailedReason || c.Message != `found no controllers for pod "x"` {
		t.Errorf("fail-safe status %+v", got.Status)
	}
	if b.Status.DisruptionsAllowed != 3 {
		t.Error("FailSafe changed its input")
	}
}

func TestStaleDisruptionTarget(t *testing.T) {
	cond := func(status corev1.ConditionStatus, reason string, at time.Time) *corev1.Pod {
		p := pod("p", true, "")
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(at)})
		return p
	}
	terminal := cond(corev1.ConditionTrue, "EvictionByEvictionAPI", now.Add(-time.Hour))
	terminal.Status.Phase = corev1.PodFailed
	deleting := cond(corev1.ConditionTrue, "EvictionByEvictionAPI", now.Add(-time.Hour))
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		wantStale bool
		wantAfter time.Duration
	}{
		{"no condition", pod("p", true, ""), false, 0},
		{"evicted a minute ago waits a minute more", cond(corev1.ConditionTrue, "EvictionByEvictionAPI", now.Add(-time.Minute)), true, time.Minute},
		{"evicted long ago is stale now", cond(corev1.ConditionTrue, "EvictionByEvictionAPI", now.Add(-time.Hour)), true, 0},
		{"set by the kubelet is never stale", cond(corev1.ConditionTrue, corev1.PodReasonTerminationByKubelet, now.Add(-time.Hour)), false, 0},
		{"already False", cond(corev1.ConditionFalse, "", now.Add(-time.Hour)), false, 0},
		{"terminal pods keep it", terminal, false, 0},
		{"deleting pods keep it", deleting, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stale, after := StaleDisruptionTarget(tc.pod, now)
			if stale != tc.wantStale || after != tc.wantAfter {
				t.Errorf("stale %v after %v, want %v after %v", stale, after, tc.wantStale, tc.wantAfter)
			}
		})
	}
}
