package job

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestBackoff(t *testing.T) {
	tests := []struct {
		failures int
		want     time.Duration
	}{{0, 0}, {1, 10 * time.Second}, {2, 20 * time.Second}, {3, 40 * time.Second}, {6, 320 * time.Second}, {7, 6 * time.Minute}, {50, 6 * time.Minute}}
	for _, tc := range tests {
		if got := Backoff(tc.failures, 10*time.Second, 6*time.Minute); got != tc.want {
			t.Errorf("Backoff(%d) = %v, want %v", tc.failures, got, tc.want)
		}
	}
}

func failedPod(exit int32, conds ...corev1.PodConditionType) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodFailed,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit}}}}}}
	for _, c := range conds {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue})
	}
	return p
}

func TestMatchPodFailurePolicy(t *testing.T) {
	policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{1}}},
	}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want *PolicyMatch
	}{
		{"disruption ignored", failedPod(42, corev1.DisruptionTarget), &PolicyMatch{batchv1.PodFailurePolicyActionIgnore, "Pod ns/p has condition DisruptionTarget matching Ignore rule at index 0"}},
		{"exit code 42 fails the job", failedPod(42), &PolicyMatch{batchv1.PodFailurePolicyActionFailJob, "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1"}},
		{"NotIn 1 counts 3", failedPod(3), &PolicyMatch{batchv1.PodFailurePolicyActionCount, "Container main for pod ns/p failed with exit code 3 matching Count rule at index 2"}},
		{"exit 1 matches nothing", failedPod(1), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := MatchPodFailurePolicy(policy, tc.pod)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("= %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWantActiveAndSucceeded(t *testing.T) {
	job := func(completions, parallelism *int32) *batchv1.Job {
		return &batchv1.Job{Spec: batchv1.JobSpec{Completions: completions, Parallelism: parallelism}}
	}
	tests := []struct {
		name      string
		j         *batchv1.Job
		succeeded int32
		active    int
		want      int32
		done      bool
	}{
		{"completions 5, parallelism 2", job(ptr.To[int32](5), ptr.To[int32](2)), 0, 0, 2, false},
		{"one completion left", job(ptr.To[int32](5), ptr.To[int32](2)), 4, 1, 1, false},
		{"completions reached", job(ptr.To[int32](5), ptr.To[int32](2)), 5, 0, 0, true},
		{"work queue: none more after a success", job(nil, ptr.To[int32](3)), 1, 2, 0, false},
		{"work queue: done once the others finish", job(nil, ptr.To[int32](3)), 1, 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := WantActive(tc.j, tc.succeeded); got != tc.want {
				t.Errorf("WantActive = %d, want %d", got, tc.want)
			}
			if got := Succeeded(tc.j, tc.succeeded, 0, tc.active); got != tc.done {
				t.Errorf("Succeeded = %v, want %v", got, tc.done)
			}
		})
	}
}

func TestIndexes(t *testing.T) {
	for _, s := range []string{"", "0", "0,1", "0-2", "1,3-5,7", "1,2,4-6"} {
		if got := FormatIndexes(ParseIndexes(s, 100)); got != s {
			t.Errorf("round trip of %q = %q", s, got)
		}
	}
	if got := FormatIndexes(map[int]bool{4: true, 0: true, 1: true, 2: true, 9: true, 10: true}); got != "0-2,4,9,10" {
		t.Errorf("FormatIndexes = %q", got)
	}
	if got := FormatIndexes(ParseIndexes("1,3-8,x,12", 6)); got != "1,3-5" {
		t.Errorf("indexes past completions or unparsable kept: %q", got)
	}
}

func TestMatchSuccessPolicy(t *testing.T) {
	rules := func(r ...batchv1.SuccessPolicyRule) *batchv1.SuccessPolicy { return &batchv1.SuccessPolicy{Rules: r} }
	tests := []struct {
		name      string
		policy    *batchv1.SuccessPolicy
		succeeded string
		want      string
	}{
		{"no policy", nil, "0-9", ""},
		{"nothing succeeded yet", rules(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](0)}), "", ""},
		{"all of succeededIndexes", rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,2-3")}), "0,2,3,7", "Matched rules at index 0"},
		{"one of succeededIndexes missing", rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,2-3")}), "0,2,4-9", ""},
		{"succeededCount of succeededIndexes", rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-4"), SucceededCount: ptr.To[int32](2)}), "1,4,8", "Matched rules at index 0"},
		{"too few of succeededIndexes", rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-4"), SucceededCount: ptr.To[int32](3)}), "1,4,8", ""},
		{"succeededCount alone", rules(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](3)}), "1,4,8", "Matched rules at index 0"},
		{"second rule matches", rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("9")}, batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](1)}), "2", "Matched rules at index 1"},
		{"rule indexes past completions are dropped", rules(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("8-20")}), "8,9", "Matched rules at index 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg, met := MatchSuccessPolicy(tc.policy, 10, ParseIndexes(tc.succeeded, 10))
			if msg != tc.want || met != (tc.want != "") {
				t.Errorf("= %q, %v; want %q", msg, met, tc.want)
			}
		})
	}
}

func TestExcessPods(t *testing.T) {
	now := time.Unix(10000, 0)
	pod := func(name, idx string, phase corev1.PodPhase) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}, Status: corev1.PodStatus{Phase: phase}}
		if idx != "" {
			p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: idx}
		}
		return p
	}
	names := func(pods []*corev1.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}
	indexedJob := &batchv1.Job{Spec: batchv1.JobSpec{CompletionMode: ptr.To(batchv1.IndexedCompletion), Completions: ptr.To[int32](3)}}
	tests := []struct {
		name   string
		j      *batchv1.Job
		active []*corev1.Pod
		rm     int
		want   []string
	}{
		{"none to remove", &batchv1.Job{}, []*corev1.Pod{pod("a", "", corev1.PodRunning)}, 0, nil},
		{"pending before running", &batchv1.Job{}, []*corev1.Pod{pod("run", "", corev1.PodRunning), pod("pend", "", corev1.PodPending)}, 1, []string{"pend"}},
		{"indexed: duplicates, bad and out-of-range indexes even with nothing to remove", indexedJob,
			[]*corev1.Pod{pod("0-run", "0", corev1.PodRunning), pod("0-pend", "0", corev1.PodPending), pod("none", "", corev1.PodRunning), pod("9", "9", corev1.PodRunning), pod("1", "1", corev1.PodRunning)},
			0, []string{"0-pend", "9", "none"}},
		{"indexed: more than the duplicates", indexedJob, []*corev1.Pod{pod("0", "0", corev1.PodRunning), pod("1", "1", corev1.PodPending)}, 1, []string{"1"}},
		// Upstream's Job order is ActivePods, not a ReplicaSet's ranks:
		// pod-deletion-cost counts for nothing and ages are compared
		// exactly, not on a logarithmic scale.
		{"deletion cost ignored", &batchv1.Job{}, []*corev1.Pod{costly(pod("costly-newer", "", corev1.PodRunning), now), pod("older", "", corev1.PodRunning)}, 1, []string{"costly-newer"}},
		{"newer first by exact age", &batchv1.Job{}, []*corev1.Pod{aged(pod("a-older", "", corev1.PodRunning), now, 70*time.Minute), aged(pod("b-newer", "", corev1.PodRunning), now, 65*time.Minute)}, 1, []string{"b-newer"}},
		{"more restarts first", &batchv1.Job{}, []*corev1.Pod{restarted(pod("calm", "", corev1.PodRunning), 0), restarted(pod("crashy", "", corev1.PodRunning), 3)}, 1, []string{"crashy"}},
		{"indexed: the duplicate kept is the one upstream keeps (older)", indexedJob, []*corev1.Pod{aged(pod("0-old", "0", corev1.PodRunning), now, 2*time.Hour), pod("0-new", "0", corev1.PodRunning)}, 0, []string{"0-new"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(ExcessPods(tc.j, tc.active, tc.rm)); !slices.Equal(got, tc.want) {
				t.Errorf("= %v, want %v", got, tc.want)
			}
		})
	}
}

// costly gives p a high pod-deletion-cost and makes it the newer pod.
func costly(p *corev1.Pod, now time.Time) *corev1.Pod {
	p.Annotations = map[string]string{corev1.PodDeletionCost: "1000"}
	p.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	return p
}

func aged(p *corev1.Pod, now time.Time, age time.Duration) *corev1.Pod {
	p.CreationTimestamp = metav1.NewTime(now.Add(-age))
	return p
}

func restarted(p *corev1.Pod, n int32) *corev1.Pod {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	return p
}

func TestExpiresAt(t *testing.T) {
	done := time.Unix(5000, 0)
	job := func(ttl *int32, cond batchv1.JobConditionType) *batchv1.Job {
		j := &batchv1.Job{Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl}}
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
				{Type: cond, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(done)}}
		}
		return j
	}
	tests := []struct {
		name string
		j    *batchv1.Job
		want time.Time
		ok   bool
	}{
		{"no TTL", job(nil, batchv1.JobComplete), time.Time{}, false},
		{"not finished", job(ptr.To[int32](10), ""), time.Time{}, false},
		{"complete", job(ptr.To[int32](10), batchv1.JobComplete), done.Add(10 * time.Second), true},
		{"failed, TTL 0", job(ptr.To[int32](0), batchv1.JobFailed), done, true},
	}
	for _, tc := range tests {
		if got, ok := ExpiresAt(tc.j); ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("%s: = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
