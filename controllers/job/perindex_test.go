package job

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func withCounts(p *corev1.Pod, counted, ignored string) *corev1.Pod {
	p.Annotations = map[string]string{batchv1.JobIndexFailureCountAnnotation: counted}
	if ignored != "" {
		p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = ignored
	}
	return p
}

func TestIndexFailed(t *testing.T) {
	policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{7}}},
	}}
	running := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	tests := []struct {
		name      string
		policy    *batchv1.PodFailurePolicy
		pod       *corev1.Pod
		want      bool
		nextCount [2]int32
	}{
		{"first failure of limit 1", nil, withCounts(failedPod(1), "0", ""), false, [2]int32{1, 0}},
		{"second failure of limit 1", nil, withCounts(failedPod(1), "1", ""), true, [2]int32{2, 0}},
		{"bad annotation is 0", nil, withCounts(failedPod(1), "-4", ""), false, [2]int32{1, 0}},
		{"FailIndex at once", policy, withCounts(failedPod(42), "0", ""), true, [2]int32{1, 0}},
		{"Ignore never fails the index", policy, withCounts(failedPod(7), "5", "2"), false, [2]int32{5, 3}},
		{"running pod", nil, running, false, [2]int32{1, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := &batchv1.Job{Spec: batchv1.JobSpec{BackoffLimitPerIndex: ptr.To[int32](1), PodFailurePolicy: tc.policy}}
			if got := IndexFailed(j, tc.pod); got != tc.want {
				t.Errorf("IndexFailed = %v, want %v", got, tc.want)
			}
			if c, i := NextIndexFailureCounts(j, tc.pod); [2]int32{c, i} != tc.nextCount {
				t.Errorf("NextIndexFailureCounts = %d, %d, want %v", c, i, tc.nextCount)
			}
		})
	}
	if c, i := NextIndexFailureCounts(&batchv1.Job{}, nil); c != 0 || i != 0 {
		t.Errorf("a first pod carries %d, %d", c, i)
	}
}

func finishedAt(phase corev1.PodPhase, at time.Time) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(at)}}}}}}
}

func TestNextBackoffRecord(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	old := BackoffRecord{FailuresAfterLastSuccess: 2, LastFailure: at(0)}
	tests := []struct {
		name              string
		succeeded, failed []*corev1.Pod
		want              BackoffRecord
	}{
		{"nothing new", nil, nil, old},
		{"failures add up", nil, []*corev1.Pod{finishedAt(corev1.PodFailed, at(5)), finishedAt(corev1.PodFailed, at(3))}, BackoffRecord{4, at(5)}},
		{"a success resets", []*corev1.Pod{finishedAt(corev1.PodSucceeded, at(1))}, nil, BackoffRecord{}},
		{"only failures after the last success count", []*corev1.Pod{finishedAt(corev1.PodSucceeded, at(4))},
			[]*corev1.Pod{finishedAt(corev1.PodFailed, at(3)), finishedAt(corev1.PodFailed, at(6)), finishedAt(corev1.PodFailed, at(9))}, BackoffRecord{2, at(9)}},
		{"failures all before the success", []*corev1.Pod{finishedAt(corev1.PodSucceeded, at(9))}, []*corev1.Pod{finishedAt(corev1.PodFailed, at(3))}, BackoffRecord{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextBackoffRecord(old, tc.succeeded, tc.failed); got.FailuresAfterLastSuccess != tc.want.FailuresAfterLastSuccess || !got.LastFailure.Equal(tc.want.LastFailure) {
				t.Errorf("= %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRemaining(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		failures int
		since    time.Duration
		want     time.Duration
	}{{0, 0, 0}, {1, 4 * time.Second, 6 * time.Second}, {3, 10 * time.Second, 30 * time.Second}, {2, time.Minute, 0}, {20, 0, 10 * time.Minute}}
	for _, tc := range tests {
		if got := Remaining(now, tc.failures, now.Add(-tc.since), 10*time.Second, 10*time.Minute); got != tc.want {
			t.Errorf("Remaining(%d failures, %v ago) = %v, want %v", tc.failures, tc.since, got, tc.want)
		}
	}
	// An index's second failure (its pod carried one before) waits 20 s.
	p := withCounts(finishedAt(corev1.PodFailed, now.Add(-5*time.Second)), "1", "")
	if got := RemainingForIndex(now, p, 10*time.Second, 10*time.Minute); got != 15*time.Second {
		t.Errorf("RemainingForIndex = %v, want 15s", got)
	}
}

func TestFinishedTime(t *testing.T) {
	created, ready, deleted := time.Unix(100, 0), time.Unix(200, 0), time.Unix(300, 0)
	base := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	}
	p := base()
	if got := FinishedTime(p); !got.Equal(created) {
		t.Errorf("no clue: %v, want creation", got)
	}
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = ptr.To(metav1.NewTime(deleted)), ptr.To[int64](30)
	if got := FinishedTime(p); !got.Equal(deleted.Add(-30 * time.Second)) {
		t.Errorf("deleted: %v", got)
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(ready)}}
	if got := FinishedTime(p); !got.Equal(ready) {
		t.Errorf("Ready=False: %v", got)
	}
	f := finishedAt(corev1.PodFailed, time.Unix(400, 0))
	f.Status.ContainerStatuses = append(f.Status.ContainerStatuses, f.Status.ContainerStatuses[0])
	f.Status.ContainerStatuses[1].State.Terminated = &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(time.Unix(500, 0))}
	if got := FinishedTime(f); !got.Equal(time.Unix(500, 0)) {
		t.Errorf("containers: %v, want the latest", got)
	}
}

func TestFirstPendingIndexes(t *testing.T) {
	taken := map[int]bool{0: true, 2: true, 3: true}
	if got := FirstPendingIndexes(7, 3, taken); !slices.Equal(got, []int{1, 4, 5}) {
		t.Errorf("= %v", got)
	}
	if got := FirstPendingIndexes(4, 3, taken); !slices.Equal(got, []int{1}) {
		t.Errorf("bounded by completions: %v", got)
	}
}

func TestDelayedRemoval(t *testing.T) {
	pod := func(idx string, counted string, phase corev1.PodPhase, at int64) *corev1.Pod {
		p := finishedAt(phase, time.Unix(at, 0))
		p.Name = idx + "-" + counted
		p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: idx, batchv1.JobIndexFailureCountAnnotation: counted}
		return p
	}
	j := &batchv1.Job{Spec: batchv1.JobSpec{Completions: ptr.To[int32](5), BackoffLimitPerIndex: ptr.To[int32](3)}}
	older, newer := pod("0", "0", corev1.PodFailed, 10), pod("0", "1", corev1.PodFailed, 20)
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "1"}}}
	tracked := []*corev1.Pod{newer, older, pod("1", "0", corev1.PodFailed, 5), pod("2", "0", corev1.PodFailed, 5), pod("3", "0", corev1.PodFailed, 5), pod("9", "0", corev1.PodFailed, 5)}
	got := DelayedRemoval(j, tracked, []*corev1.Pod{running}, map[int]bool{2: true}, map[int]bool{3: true})
	if len(got) != 1 || got[0] != newer {
		t.Errorf("= %v, want only index 0's latest failure (1 runs again, 2 succeeded, 3 failed, 9 is out of range)", got)
	}
}

func TestPastBackoffLimitOnFailure(t *testing.T) {
	restarts := func(n int32) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{RestartCount: n}}}}
	}
	job := func(policy corev1.RestartPolicy, limit int32) *batchv1.Job {
		return &batchv1.Job{Spec: batchv1.JobSpec{BackoffLimit: &limit, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: policy}}}}
	}
	tests := []struct {
		name string
		j    *batchv1.Job
		pods []*corev1.Pod
		want bool
	}{
		{"Never ignores restarts", job(corev1.RestartPolicyNever, 1), []*corev1.Pod{restarts(5)}, false},
		{"restarts reach the limit", job(corev1.RestartPolicyOnFailure, 3), []*corev1.Pod{restarts(1), restarts(2)}, true},
		{"below the limit", job(corev1.RestartPolicyOnFailure, 3), []*corev1.Pod{restarts(2)}, false},
		{"limit 0: any restart", job(corev1.RestartPolicyOnFailure, 0), []*corev1.Pod{restarts(1)}, true},
		{"limit 0: none", job(corev1.RestartPolicyOnFailure, 0), []*corev1.Pod{restarts(0)}, false},
	}
	for _, tc := range tests {
		if got := PastBackoffLimitOnFailure(tc.j, tc.pods); got != tc.want {
			t.Errorf("%s: = %v, want %v", tc.name, got, tc.want)
		}
	}
}
