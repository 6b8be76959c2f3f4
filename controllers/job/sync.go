package job

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/controller"
)

// maxPodCreatesPerSync bounds the pods one sync creates or deletes, as
// upstream.
const maxPodCreatesPerSync = 500

// jobState is what one sync of a Job works from and decides.
type jobState struct {
	j   *batchv1.Job
	s   *batchv1.JobStatus
	exp expected
	now time.Time
	// tracked are the pods still to be accounted: holding the finalizer,
	// which this controller has not already removed.
	tracked                    []*corev1.Pod
	active, ready, terminating []*corev1.Pod
	completed, failedIndexes   map[int]bool // Indexed only; failedIndexes with backoffLimitPerIndex
	delayed                    map[int]*corev1.Pod
	backoff                    BackoffRecord
	newSucceeded, newFailed    []*corev1.Pod
	// succeeded counts the Job's successes, counted, uncounted or new
	// (an Indexed Job's completed indexes): the same before and after
	// they move between those.
	succeeded   int32
	completions int // Indexed only
}

func (st *jobState) validIndex(p *corev1.Pod) (int, bool) {
	if !indexed(st.j) {
		return -1, true
	}
	i, ok := index(p)
	return i, ok && i < st.completions
}

func (c *Controller) sync(ctx context.Context, k string) error {
	if pod, ok := isOrphanKey(k); ok {
		return c.syncOrphan(ctx, pod)
	}
	cached, ok := c.jobs.Store().Get(k)
	if !ok {
		return nil
	}
	// Decide only from caches that show this controller's own last writes
	// (retried, rate-limited, until they do); the Job is read again once
	// they do.
	if err := c.writes.ready(cached.UID, c.lastSync); err != nil {
		return fmt.Errorf("job %s: %w", k, err)
	}
	if cached, ok = c.jobs.Store().Get(k); !ok {
		return nil
	}
	if ManagedElsewhere(cached) {
		// Another controller owns its pods and status, as upstream's
		// JobManagedBy: not even its finalizers are this one's to remove.
		return nil
	}
	j := cached.DeepCopy()
	now := c.now()
	// Expectations are read before the pods are listed, as upstream's: a
	// creation (or finalizer removal) observed in between would otherwise
	// satisfy them while the list still lacks it, and the pod be made (or
	// counted) twice.
	exp := c.expectations(j.UID)
	pods, _ := c.pods.Store().ByIndex(ownerIndex, string(j.UID))
	if finished(&j.Status) {
		if err := c.releaseFinalizers(ctx, j.UID, pods); err != nil {
			return err
		}
		return c.expire(ctx, j, now)
	}
	if j.DeletionTimestamp != nil {
		return c.releaseFinalizers(ctx, j.UID, pods)
	}
	nsPods, _ := c.pods.Store().ByIndex(namespaceIndex, j.Namespace)
	pods, err := c.claim(ctx, j, nsPods)
	if err != nil {
		return err
	}
	s := j.Status.DeepCopy()
	if s.StartTime == nil && !suspended(j) {
		s.StartTime = ptrTime(now)
	}
	if s.UncountedTerminatedPods == nil {
		s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	u := s.UncountedTerminatedPods
	st := &jobState{j: j, s: s, exp: exp, now: now}
	if indexed(j) && j.Spec.Completions != nil {
		st.completions = int(*j.Spec.Completions)
	}
	for _, p := range pods {
		if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) && !exp.released[p.UID] {
			st.tracked = append(st.tracked, p)
		}
		switch {
		case controller.Terminating(p):
			st.terminating = append(st.terminating, p)
		case controller.Active(p):
			st.active = append(st.active, p)
			if controller.Ready(p) {
				st.ready = append(st.ready, p)
			}
		}
	}
	// Pods finished since the last count.
	for _, p := range st.tracked {
		if _, ok := st.validIndex(p); !ok {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !slices.Contains(u.Succeeded, p.UID):
			st.newSucceeded = append(st.newSucceeded, p)
		case PodFailed(j, p) && !slices.Contains(u.Failed, p.UID):
			st.newFailed = append(st.newFailed, p)
		}
	}
	if indexed(j) {
		st.completed = ParseIndexes(s.CompletedIndexes, st.completions)
		for _, p := range st.tracked {
			if i, ok := st.validIndex(p); ok && p.Status.Phase == corev1.PodSucceeded {
				st.completed[i] = true
			}
		}
	}
	if perIndex(j) {
		st.failedIndexes = ParseIndexes(ptr.Deref(s.FailedIndexes, ""), st.completions)
		for _, p := range st.tracked {
			if i, ok := st.validIndex(p); ok && IndexFailed(j, p) {
				st.failedIndexes[i] = true
			}
		}
		st.delayed = DelayedRemoval(j, st.tracked, st.active, st.completed, st.failedIndexes)
	}
	st.succeeded = s.Succeeded + int32(len(u.Succeeded)+len(st.newSucceeded))
	if indexed(j) {
		st.succeeded = int32(len(st.completed))
	}
	c.mu.Lock()
	st.backoff = NextBackoffRecord(c.backoffs[j.UID], st.newSucceeded, st.newFailed)
	c.mu.Unlock()

	// Has the Job reached an end?
	ending := condition(s, batchv1.JobSuccessCriteriaMet)
	if ending == nil {
		ending = condition(s, batchv1.JobFailureTarget)
	}
	if ending == nil {
		if t, reason, msg := c.end(st); t != "" {
			setCondition(s, t, corev1.ConditionTrue, reason, msg, now)
			ending = condition(s, t)
		}
	}

	// Step 1: finished pods are noted as uncounted (unless ignored by an
	// Ignore rule), and their finalizers picked for removal.
	var release []*corev1.Pod
	failing := ending != nil && ending.Type == batchv1.JobFailureTarget
	newIndexes, capped := 0, false
	for _, p := range st.tracked {
		if len(u.Succeeded)+len(u.Failed)+newIndexes >= c.maxUncounted {
			// The rest wait for the next sync (this one's status write
			// brings it): the status stays small and one big Job does not
			// starve the others. The Job cannot finish before.
			capped = true
			break
		}
		failed := PodFailed(j, p)
		if !st.canRelease(ending, p, failed) {
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded && indexed(j) {
			newIndexes++
		}
		release = append(release, p)
		_, valid := st.validIndex(p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !slices.Contains(u.Failed, p.UID):
			// An Indexed Job counts its completed indexes, not pods.
			if !indexed(j) && !slices.Contains(u.Succeeded, p.UID) {
				u.Succeeded = append(u.Succeeded, p.UID)
			}
		case failed || failing:
			// Once the Job fails, every pod still running fails with it.
			if valid && !slices.Contains(u.Failed, p.UID) && countsFailure(j, p) {
				u.Failed = append(u.Failed, p.UID)
			}
		}
	}
	if indexed(j) {
		s.CompletedIndexes = FormatIndexes(st.completed)
	}
	if perIndex(j) {
		s.FailedIndexes = ptr.To(FormatIndexes(st.failedIndexes))
	}
	if indexed(j) {
		s.Succeeded = int32(len(st.completed))
	}
	if err := c.writeStatus(ctx, j, s); err != nil {
		return err
	}
	if !perIndex(j) {
		c.mu.Lock()
		c.backoffs[j.UID] = st.backoff
		c.mu.Unlock()
	}
	// Step 2: their finalizers go.
	if err := c.releaseFinalizers(ctx, j.UID, release); err != nil {
		return err
	}
	// Step 3: uncounted pods without a finalizer (or gone) are counted.
	byUID := map[types.UID]*corev1.Pod{}
	for _, p := range pods {
		byUID[p.UID] = p
	}
	released := map[types.UID]bool{}
	for _, p := range release {
		released[p.UID] = true
	}
	move := func(uids []types.UID, count *int32) []types.UID {
		var keep []types.UID
		for _, uid := range uids {
			if p := byUID[uid]; p != nil && !released[uid] && slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
				keep = append(keep, uid)
				continue
			}
			*count++
		}
		return keep
	}
	u.Succeeded = move(u.Succeeded, &s.Succeeded)
	u.Failed = move(u.Failed, &s.Failed)
	if indexed(j) {
		s.Succeeded = int32(len(st.completed))
	}

	activeCount := len(st.active)
	var manageErr error
	switch {
	case ending != nil:
		// Stop what still runs; the final condition comes once nothing
		// does and every pod is counted.
		c.deletePods(ctx, j, st.active)
		if !capped && len(st.active)+len(st.terminating) == 0 && len(u.Succeeded)+len(u.Failed) == 0 {
			if ending.Type == batchv1.JobFailureTarget {
				setCondition(s, batchv1.JobFailed, corev1.ConditionTrue, ending.Reason, ending.Message, now)
				c.recorder.Event(j, kind.Kind, corev1.EventTypeWarning, ending.Reason, ending.Message)
			} else {
				setCondition(s, batchv1.JobComplete, corev1.ConditionTrue, ending.Reason, ending.Message, now)
				s.CompletionTime = ptrTime(now)
				if j.Spec.Completions != nil && s.Succeeded > *j.Spec.Completions {
					c.recorder.Event(j, kind.Kind, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
				}
				c.recorder.Event(j, kind.Kind, corev1.EventTypeNormal, "Completed", "Job completed")
			}
		}
		activeCount = 0
	default:
		var removed []*corev1.Pod
		removed, manageErr = c.manage(ctx, st)
		activeCount -= len(removed)
		st.ready = slices.DeleteFunc(st.ready, func(p *corev1.Pod) bool { return slices.Contains(removed, p) })
		if suspended(j) {
			if cond := condition(s, batchv1.JobSuspended); cond == nil {
				c.recorder.Event(j, kind.Kind, corev1.EventTypeNormal, "Suspended", "Job suspended")
			}
			setCondition(s, batchv1.JobSuspended, corev1.ConditionTrue, ReasonSuspended, "Job suspended", now)
			s.StartTime = nil
		} else if cond := condition(s, batchv1.JobSuspended); cond != nil {
			setCondition(s, batchv1.JobSuspended, corev1.ConditionFalse, ReasonResumed, "Job resumed", now)
			c.recorder.Event(j, kind.Kind, corev1.EventTypeNormal, "Resumed", "Job resumed")
			s.StartTime = ptrTime(now)
		}
		if j.Spec.ActiveDeadlineSeconds != nil && s.StartTime != nil {
			c.queue.AddAfter(k, s.StartTime.Add(time.Duration(*j.Spec.ActiveDeadlineSeconds)*time.Second).Sub(now)+10*time.Millisecond)
		}
	}
	s.Active = int32(activeCount)
	s.Ready = ptrInt32(int32(len(st.ready)))
	if ending != nil || suspended(j) {
		s.Ready = ptrInt32(0)
	}
	s.Terminating = ptrInt32(int32(len(st.terminating)))
	if err := c.writeStatus(ctx, j, s); err != nil {
		return err
	}
	return manageErr
}

// end decides whether a running Job has reached an end, in upstream's
// order: a FailJob rule, backoffLimit, activeDeadlineSeconds, the failed
// indexes, the successPolicy, then the completions. It returns the interim
// condition's type, reason and message, or an empty type.
func (c *Controller) end(st *jobState) (batchv1.JobConditionType, string, string) {
	j, s := st.j, st.s
	for _, p := range st.tracked {
		if PodFailed(j, p) {
			if m := MatchPodFailurePolicy(j.Spec.PodFailurePolicy, p); m != nil && m.Action == batchv1.PodFailurePolicyActionFailJob {
				return batchv1.JobFailureTarget, ReasonPodFailurePolicy, m.Message
			}
		}
	}
	failed := int(s.Failed) + len(s.UncountedTerminatedPods.Failed)
	for _, p := range st.newFailed {
		if countsFailure(j, p) {
			failed++
		}
	}
	backoffLimit := ptr.Deref(j.Spec.BackoffLimit, 6)
	switch {
	case failed > int(backoffLimit) || PastBackoffLimitOnFailure(j, st.active):
		return batchv1.JobFailureTarget, ReasonBackoffLimitExceeded, msgBackoffLimit
	case j.Spec.ActiveDeadlineSeconds != nil && s.StartTime != nil && !suspended(j) &&
		!st.now.Before(s.StartTime.Add(time.Duration(*j.Spec.ActiveDeadlineSeconds)*time.Second)):
		return batchv1.JobFailureTarget, ReasonDeadlineExceeded, msgDeadline
	}
	if perIndex(j) {
		switch {
		case j.Spec.MaxFailedIndexes != nil && len(st.failedIndexes) > int(*j.Spec.MaxFailedIndexes):
			return batchv1.JobFailureTarget, batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes
		case len(st.failedIndexes) > 0 && len(st.failedIndexes)+len(st.completed) >= st.completions:
			return batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, msgFailedIndexes
		}
	}
	if indexed(j) {
		if msg, met := MatchSuccessPolicy(j.Spec.SuccessPolicy, int32(st.completions), st.completed); met {
			return batchv1.JobSuccessCriteriaMet, ReasonSuccessPolicy, msg
		}
	}
	if Succeeded(j, st.succeeded, len(st.completed), len(st.active)) {
		return batchv1.JobSuccessCriteriaMet, ReasonCompletionsReached, msgCompletions
	}
	return "", "", ""
}

// canRelease is upstream's canRemoveFinalizer: a pod's finalizer goes once
// the Job ends or the pod succeeded or failed, except a failed pod whose
// index waits for its replacement to carry its failure count.
func (st *jobState) canRelease(ending *batchv1.JobCondition, p *corev1.Pod, failed bool) bool {
	if ending != nil || p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if !failed {
		return false
	}
	if i, ok := index(p); ok && st.delayed[i] != nil && st.delayed[i].UID == p.UID {
		return false
	}
	return true
}

// PastBackoffLimitOnFailure is upstream's check for restartPolicy
// OnFailure, whose failures are container restarts: their sum over the
// running and pending pods reaches backoffLimit (exceeds 0 for a limit 0).
func PastBackoffLimitOnFailure(j *batchv1.Job, active []*corev1.Pod) bool {
	if j.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range active {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			restarts += cs.RestartCount
		}
	}
	limit := ptr.Deref(j.Spec.BackoffLimit, 6)
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

// ManagedElsewhere says whether a Job's spec.managedBy names a controller
// other than this one (kubernetes.io/job-controller), which then leaves it
// alone.
func ManagedElsewhere(j *batchv1.Job) bool {
	return j.Spec.ManagedBy != nil && *j.Spec.ManagedBy != batchv1.JobControllerName
}

func suspended(j *batchv1.Job) bool { return j.Spec.Suspend != nil && *j.Spec.Suspend }

func ptrTime(t time.Time) *metav1.Time { mt := metav1.NewTime(t); return &mt }
func ptrInt32(v int32) *int32          { return &v }

func (c *Controller) writeStatus(ctx context.Context, j *batchv1.Job, s *batchv1.JobStatus) error {
	if apiequality.Semantic.DeepEqual(j.Status, *s) {
		return nil
	}
	cp := j.DeepCopy()
	cp.Status = *s
	out, err := c.client.BatchV1().Jobs(j.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of job %s: %w", key(j), err)
	}
	c.writes.wroteAt(j.UID, resJobs, out.ResourceVersion)
	*j = *out
	return nil
}
