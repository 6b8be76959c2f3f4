package job

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/controllers/controller"
)

// Condition reasons and messages, as upstream's job controller writes
// them.
const (
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonPodFailurePolicy     = "PodFailurePolicy"
	ReasonCompletionsReached   = "CompletionsReached"
	ReasonSuccessPolicy        = "SuccessPolicy"
	ReasonSuspended            = "JobSuspended"
	ReasonResumed              = "JobResumed"

	msgBackoffLimit = "Job has reached the specified backoff limit"
	msgDeadline     = "Job was active longer than specified deadline"
	msgCompletions  = "Reached expected number of succeeded pods"
)

// Backoff is the delay before a failed Job's next pod: base doubled for
// each failure after the first, at most limit (upstream: 10 s and 10 min).
func Backoff(failures int, base, limit time.Duration) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := base
	for range failures - 1 {
		d *= 2
		if d >= limit {
			return limit
		}
	}
	return min(d, limit)
}

// PolicyMatch is the first pod failure policy rule a failed pod matches.
type PolicyMatch struct {
	Action  batchv1.PodFailurePolicyAction
	Message string
}

// MatchPodFailurePolicy returns the rule the failed pod matches, or nil,
// as upstream's matchPodFailurePolicy: the first rule whose onExitCodes
// a terminated container's non-zero exit code meets (In or NotIn its
// values; of the named container, if any; containers before init
// containers), or one of whose onPodConditions a pod condition matches.
func MatchPodFailurePolicy(p *batchv1.PodFailurePolicy, pod *corev1.Pod) *PolicyMatch {
	if p == nil {
		return nil
	}
	for i, rule := range p.Rules {
		if r := rule.OnExitCodes; r != nil {
			for _, statuses := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
				for _, s := range statuses {
					t := s.State.Terminated
					if t == nil || t.ExitCode == 0 || (r.ContainerName != nil && *r.ContainerName != s.Name) {
						continue
					}
					in := slices.Contains(r.Values, t.ExitCode)
					if (r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) || (r.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
						return &PolicyMatch{Action: rule.Action, Message: fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
							s.Name, pod.Namespace, pod.Name, t.ExitCode, rule.Action, i)}
					}
				}
			}
			continue
		}
		for _, c := range pod.Status.Conditions {
			for _, pattern := range rule.OnPodConditions {
				if c.Type == pattern.Type && c.Status == pattern.Status {
					return &PolicyMatch{Action: rule.Action, Message: fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d",
						pod.Namespace, pod.Name, c.Type, rule.Action, i)}
				}
			}
		}
	}
	return nil
}

// WantActive is how many pods a NonIndexed Job should run: parallelism,
// but no more than the completions left; without completions, none more
// once one pod has succeeded.
func WantActive(j *batchv1.Job, succeeded int32) int32 {
	parallelism := int32(1)
	if j.Spec.Parallelism != nil {
		parallelism = *j.Spec.Parallelism
	}
	if j.Spec.Completions == nil {
		if succeeded > 0 {
			return 0
		}
		return parallelism
	}
	return max(0, min(parallelism, *j.Spec.Completions-succeeded))
}

// Succeeded says whether a Job has met its completions: completions
// succeeded pods (indexes, for Indexed), or without completions one
// success and nothing running.
func Succeeded(j *batchv1.Job, succeeded int32, completedIndexes int, active int) bool {
	if j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion {
		return j.Spec.Completions != nil && completedIndexes >= int(*j.Spec.Completions)
	}
	if j.Spec.Completions == nil {
		return succeeded > 0 && active == 0
	}
	return succeeded >= *j.Spec.Completions
}

// ParseIndexes reads upstream's index list ("1,3-5,7") into a set, of
// indexes below completions only, skipping what does not parse (as
// upstream's parseIndexesFromString).
func ParseIndexes(s string, completions int) map[int]bool {
	out := map[int]bool{}
	for part := range strings.SplitSeq(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := a; i <= b && i < completions; i++ {
			out[i] = true
		}
	}
	return out
}

// FormatIndexes writes a set as upstream's completedIndexes and
// failedIndexes: sorted, runs of three or more as ranges, a run of two as
// two ("1,2,4-6").
func FormatIndexes(set map[int]bool) string {
	idx := make([]int, 0, len(set))
	for i := range set {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[i]))
		switch {
		case j == i+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(idx[j]))
		case j > i+1:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	return b.String()
}

// MatchSuccessPolicy says whether an Indexed Job's succeeded indexes meet
// one of its successPolicy's rules, and which, as upstream's message: a
// rule with succeededIndexes is met when all of them succeeded, or
// succeededCount of them; one with only succeededCount when that many
// indexes did. Nothing is met before an index succeeds.
func MatchSuccessPolicy(p *batchv1.SuccessPolicy, completions int32, succeeded map[int]bool) (string, bool) {
	if p == nil || len(succeeded) == 0 {
		return "", false
	}
	for i, rule := range p.Rules {
		if rule.SucceededIndexes != nil {
			required := ParseIndexes(*rule.SucceededIndexes, int(completions))
			if len(required) == 0 {
				continue // unparsable: validation keeps such rules out
			}
			n := 0
			for ix := range required {
				if succeeded[ix] {
					n++
				}
			}
			if n == len(required) || (rule.SucceededCount != nil && n >= int(*rule.SucceededCount)) {
				return fmt.Sprintf("Matched rules at index %d", i), true
			}
		} else if rule.SucceededCount != nil && len(succeeded) >= int(*rule.SucceededCount) {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}

// ExcessPods are the active pods a Job should delete to keep at least
// rmAtLeast fewer, as upstream's activePodsForRemoval: for an Indexed Job
// first those without a valid index and all but one of each index run
// twice (the one kept comes last in upstream's ActivePods order); then
// the first of the rest in that order (unscheduled, pending, not ready,
// newer; controller.SortActive).
func ExcessPods(j *batchv1.Job, active []*corev1.Pod, rmAtLeast int) []*corev1.Pod {
	var rm, left []*corev1.Pod
	if indexed(j) && j.Spec.Completions != nil {
		byIndex := map[int][]*corev1.Pod{}
		for _, p := range active {
			if i, ok := index(p); ok && i < int(*j.Spec.Completions) {
				byIndex[i] = append(byIndex[i], p)
			} else {
				rm = append(rm, p)
			}
		}
		for _, pods := range byIndex {
			controller.SortActive(pods)
			rm = append(rm, pods[:len(pods)-1]...)
			left = append(left, pods[len(pods)-1])
		}
	} else {
		left = slices.Clone(active)
	}
	if n := rmAtLeast - len(rm); n > 0 {
		controller.SortActive(left)
		rm = append(rm, left[:min(n, len(left))]...)
	}
	return rm
}
