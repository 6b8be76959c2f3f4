package job

import (
	"math"
	"slices"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Upstream's messages for the per-index failure reasons.
const (
	msgMaxFailedIndexes = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes    = "Job has failed indexes"
)

func perIndex(j *batchv1.Job) bool { return indexed(j) && j.Spec.BackoffLimitPerIndex != nil }

// onlyReplaceFailed says whether a pod is replaced only once it has
// failed, not while it terminates: podReplacementPolicy Failed, which a
// podFailurePolicy implies.
func onlyReplaceFailed(j *batchv1.Job) bool {
	return j.Spec.PodFailurePolicy != nil || (j.Spec.PodReplacementPolicy != nil && *j.Spec.PodReplacementPolicy == batchv1.Failed)
}

// PodFailed is upstream's isPodFailed: Failed, or deleted before it
// succeeded (it may never reach Failed) unless only failed pods are
// replaced.
func PodFailed(j *batchv1.Job, p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	return !onlyReplaceFailed(j) && p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

// countsFailure says whether a failed pod counts against the limits: not
// when it matches an Ignore rule.
func countsFailure(j *batchv1.Job, p *corev1.Pod) bool {
	m := MatchPodFailurePolicy(j.Spec.PodFailurePolicy, p)
	return m == nil || m.Action != batchv1.PodFailurePolicyActionIgnore
}

// IndexFailureCounts are a pod's batch.kubernetes.io/job-index-failure-count
// and job-index-ignored-failure-count annotations: the failures (counted,
// and ignored by an Ignore rule) of its index before it. A missing, bad or
// out of range value is 0, as upstream.
func IndexFailureCounts(p *corev1.Pod) (counted, ignored int32) {
	parse := func(key string) int32 {
		n, err := strconv.Atoi(p.Annotations[key])
		if err != nil || n < 0 || n > math.MaxInt32 {
			return 0
		}
		return int32(n)
	}
	return parse(batchv1.JobIndexFailureCountAnnotation), parse(batchv1.JobIndexIgnoredFailureCountAnnotation)
}

// IndexFailed is upstream's isIndexFailed: a failed pod fails its index
// when it matches a FailIndex rule, or counts and its index had already
// failed backoffLimitPerIndex times before it.
func IndexFailed(j *batchv1.Job, p *corev1.Pod) bool {
	if !PodFailed(j, p) {
		return false
	}
	if m := MatchPodFailurePolicy(j.Spec.PodFailurePolicy, p); m != nil {
		switch m.Action {
		case batchv1.PodFailurePolicyActionFailIndex:
			return true
		case batchv1.PodFailurePolicyActionIgnore:
			return false
		}
	}
	counted, _ := IndexFailureCounts(p)
	return counted >= *j.Spec.BackoffLimitPerIndex
}

// NextIndexFailureCounts are the failure counts a replacement of the
// failed pod carries: its own, plus its failure (ignored if it matches an
// Ignore rule). Without a pod to replace, 0.
func NextIndexFailureCounts(j *batchv1.Job, replaced *corev1.Pod) (counted, ignored int32) {
	if replaced == nil {
		return 0, 0
	}
	counted, ignored = IndexFailureCounts(replaced)
	if countsFailure(j, replaced) {
		counted++
	} else {
		ignored++
	}
	return counted, ignored
}

// DelayedRemoval picks, for each index neither succeeded, failed nor
// running, the latest failed pod still tracked: its finalizer stays (so
// the pod stays) until its replacement exists and carries its failure
// count, as upstream's getPodsWithDelayedDeletionPerIndex.
func DelayedRemoval(j *batchv1.Job, tracked, active []*corev1.Pod, completed, failed map[int]bool) map[int]*corev1.Pod {
	running := map[int]bool{}
	for _, p := range active {
		if i, ok := index(p); ok {
			running[i] = true
		}
	}
	out := map[int]*corev1.Pod{}
	for _, p := range tracked {
		i, ok := index(p)
		if !ok || i >= int(*j.Spec.Completions) || !PodFailed(j, p) || completed[i] || failed[i] || running[i] {
			continue
		}
		last, seen := out[i]
		if !seen {
			out[i] = p
			continue
		}
		lc, li := IndexFailureCounts(last)
		pc, pi := IndexFailureCounts(p)
		if lc+li <= pc+pi && !FinishedTime(p).Before(FinishedTime(last)) {
			out[i] = p
		}
	}
	return out
}

// FirstPendingIndexes are the lowest count indexes below completions not
// in taken (succeeded, failed, running).
func FirstPendingIndexes(completions, count int, taken map[int]bool) []int {
	var out []int
	for i := 0; i < completions && len(out) < count; i++ {
		if !taken[i] {
			out = append(out, i)
		}
	}
	return out
}

// FinishedTime is when a pod finished, as upstream's getFinishedTime: its
// containers' latest finishedAt once all have one, else when Ready turned
// False, else its deletion time less its grace period, else its creation.
func FinishedTime(p *corev1.Pod) time.Time {
	var latest time.Time
	all := len(p.Status.ContainerStatuses) > 0
	for _, s := range p.Status.ContainerStatuses {
		t := s.State.Terminated
		if t == nil || t.FinishedAt.IsZero() {
			all = false
			break
		}
		if t.FinishedAt.After(latest) {
			latest = t.FinishedAt.Time
		}
	}
	if all {
		return latest
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		var grace int64
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// BackoffRecord is what a Job's pod creation back-off is computed from:
// the failures since the last success and when the last one was.
type BackoffRecord struct {
	FailuresAfterLastSuccess int
	LastFailure              time.Time
}

// NextBackoffRecord is upstream's newBackoffRecord: newly failed pods add
// to the failures, unless a newly succeeded pod finished after them, which
// starts the count again.
func NextBackoffRecord(old BackoffRecord, succeeded, failed []*corev1.Pod) BackoffRecord {
	if len(failed) == 0 {
		if len(succeeded) > 0 {
			return BackoffRecord{}
		}
		return old
	}
	byFinish := func(pods []*corev1.Pod) []*corev1.Pod {
		s := slices.Clone(pods)
		slices.SortStableFunc(s, func(a, b *corev1.Pod) int { return FinishedTime(a).Compare(FinishedTime(b)) })
		return s
	}
	failed = byFinish(failed)
	if len(succeeded) == 0 {
		return BackoffRecord{FailuresAfterLastSuccess: old.FailuresAfterLastSuccess + len(failed), LastFailure: FinishedTime(failed[len(failed)-1])}
	}
	succeeded = byFinish(succeeded)
	lastSuccess := FinishedTime(succeeded[len(succeeded)-1])
	var r BackoffRecord
	for i := len(failed) - 1; i >= 0; i-- {
		t := FinishedTime(failed[i])
		if !t.After(lastSuccess) {
			break
		}
		if r.FailuresAfterLastSuccess == 0 {
			r.LastFailure = t
		}
		r.FailuresAfterLastSuccess++
	}
	return r
}

// Remaining is how long pod creation still waits after failures, the last
// at last: Backoff(failures) from then.
func Remaining(now time.Time, failures int, last time.Time, base, limit time.Duration) time.Duration {
	if failures == 0 {
		return 0
	}
	return max(0, Backoff(failures, base, limit)-now.Sub(last))
}

// RemainingForIndex is how long an index whose last pod failed waits for
// its replacement: by the failures its replacement will carry.
func RemainingForIndex(now time.Time, lastFailed *corev1.Pod, base, limit time.Duration) time.Duration {
	if lastFailed == nil {
		return 0
	}
	counted, ignored := IndexFailureCounts(lastFailed)
	return Remaining(now, int(counted+ignored)+1, FinishedTime(lastFailed), base, limit)
}
