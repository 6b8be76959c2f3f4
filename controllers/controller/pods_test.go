package controller

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: corev1.PodSpec{NodeName: "n1"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt          { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func created(ago time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(now.Add(-ago)) }
}
func restarts(n int32) podOpt {
	return func(p *corev1.Pod) { p.Status.ContainerStatuses = []corev1.ContainerStatus{{RestartCount: n}} }
}
func cost(v string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.PodDeletionCost: v} }
}
func readySince(ago time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
	}
}

func TestPodsToDelete(t *testing.T) {
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		related []*corev1.Pod
		want    string // the first pod deleted
	}{
		{"unscheduled first", []*corev1.Pod{pod("a", readySince(time.Hour)), pod("b", onNode(""), phase(corev1.PodPending))}, nil, "b"},
		{"pending before unknown before running", []*corev1.Pod{pod("run"), pod("unk", phase(corev1.PodUnknown)), pod("pend", phase(corev1.PodPending))}, nil, "pend"},
		{"unknown before running", []*corev1.Pod{pod("run"), pod("unk", phase(corev1.PodUnknown))}, nil, "unk"},
		{"not ready before ready", []*corev1.Pod{pod("ready", readySince(time.Hour)), pod("notready")}, nil, "notready"},
		{"lower deletion cost first", []*corev1.Pod{pod("cheap", readySince(time.Hour), cost("-5")), pod("dear", readySince(time.Hour), cost("10"))}, nil, "cheap"},
		{"doubled up first", []*corev1.Pod{pod("alone", onNode("n1"), readySince(time.Hour)), pod("crowded", onNode("n2"), readySince(time.Hour))},
			[]*corev1.Pod{pod("x", onNode("n2")), pod("y", onNode("n2")), pod("z", onNode("n1"))}, "crowded"},
		{"ready for less time first", []*corev1.Pod{pod("long", readySince(10*time.Hour)), pod("short", readySince(time.Minute))}, nil, "short"},
		{"more restarts first", []*corev1.Pod{pod("calm"), pod("flaky", restarts(4))}, nil, "flaky"},
		{"newer first", []*corev1.Pod{pod("old", created(10*time.Hour)), pod("new", created(time.Minute))}, nil, "new"},
		{"same log bucket: uid decides", []*corev1.Pod{pod("b", created(65*time.Minute)), pod("a", created(70*time.Minute))}, nil, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PodsToDelete(tc.pods, tc.related, 1, now)
			if len(got) != 1 || got[0].Name != tc.want {
				t.Fatalf("PodsToDelete = %v, want %s", names(got), tc.want)
			}
		})
	}
	all := []*corev1.Pod{pod("a"), pod("b")}
	if got := PodsToDelete(all, nil, 5, now); len(got) != 2 {
		t.Errorf("more to delete than pods: %v", names(got))
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestSlowStart(t *testing.T) {
	tests := []struct {
		name      string
		count     int
		failAfter int64 // calls that succeed before every further call fails; -1 never
		wantDone  int
		wantCalls int64
	}{
		{"all succeed in batches 1,2,4,3", 10, -1, 10, 10},
		{"none", 0, -1, 0, 0},
		{"the first call fails: one call only", 10, 0, 0, 1},
		{"a failure in the batch of 4 stops there", 10, 4, 4, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			done, err := SlowStart(tc.count, func() error {
				if n := calls.Add(1); tc.failAfter >= 0 && n > tc.failAfter {
					return errors.New("refused")
				}
				return nil
			})
			if done != tc.wantDone || calls.Load() != tc.wantCalls || (err != nil) != (tc.failAfter >= 0) {
				t.Fatalf("SlowStart = %d, %v after %d calls; want %d after %d", done, err, calls.Load(), tc.wantDone, tc.wantCalls)
			}
		})
	}
}

func TestAvailable(t *testing.T) {
	p := pod("p", readySince(30*time.Second))
	if !Available(p, 0, now) || !Available(p, 10, now) || Available(p, 60, now) || Available(pod("q"), 0, now) {
		t.Error("Available: ready 30 s ago is available with minReadySeconds 0 and 10, not 60; a pod not ready never")
	}
}
