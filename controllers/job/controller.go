// Package job runs Jobs' pods to completion: the job of
// kube-controller-manager's job controller, with its TTL-after-finished
// controller's work on finished Jobs.
//
// A Job claims the pods its selector matches (adopting orphans, releasing
// pods it no longer matches), creates the ones it lacks (slow start, with
// the batch.kubernetes.io/job-tracking finalizer) up to parallelism and
// the completions left, after an exponential back-off once pods have
// failed (per index with backoffLimitPerIndex), and deletes the ones it
// has too many of. Indexed Jobs give each pod its completion index (label,
// annotation and JOB_COMPLETION_INDEX). Finished pods are accounted in two
// steps, as upstream, so none is counted twice or lost across restarts:
// their uids go into status.uncountedTerminatedPods (an Indexed Job's
// successes into completedIndexes), their finalizer is removed, then they
// move into succeeded/failed. A Job fails on a FailJob rule of its
// podFailurePolicy, backoffLimit, activeDeadlineSeconds or its failed
// indexes, first with FailureTarget while its pods are stopped, then
// Failed; it succeeds by its completions or successPolicy with
// SuccessCriteriaMet, then Complete. A suspended Job has no pods; one
// managed by another controller (spec.managedBy) is left alone.
// ttlSecondsAfterFinished deletes a finished Job (in the foreground) once
// it passes.
//
// Expectations (creations, deletions and finalizer removals not yet seen)
// are read before the pods are listed, and a Job is synced only once the
// caches show this controller's own last writes, so a slow watch never
// makes it create a pod or count one twice.
package job

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/replicaset"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

const ownerIndex = "owner"

var kind = batchv1.SchemeGroupVersion.WithKind("Job")

// Options configure a Controller.
type Options struct {
	// Client watches Jobs and pods and writes them. Required.
	Client kubernetes.Interface
	// BackoffBase and BackoffLimit bound the delay before a failed Job's
	// (or index's) next pod; 0 means upstream's 10 s and 10 min.
	BackoffBase, BackoffLimit time.Duration
	// Workers sync Jobs in parallel; 0 means 5.
	Workers int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Controller is the Job controller. Run drives it.
type Controller struct {
	client              kubernetes.Interface
	backoff, backoffMax time.Duration
	workers             int
	now                 func() time.Time
	queue               *workqueue.Queue[string]
	recorder            *events.Recorder
	jobs                *informer.Informer[*batchv1.Job]
	pods                *informer.Informer[*corev1.Pod]

	// mu guards the fields below.
	mu sync.Mutex
	// pending counts creations not yet seen in the cache, per Job.
	pending map[types.UID]int
	// backoffs are the Jobs' pod creation back-off records.
	backoffs map[types.UID]BackoffRecord
	// released are the pods (and their Job) whose job-tracking finalizer
	// this controller removes, and so counts, until the cache shows them
	// without it or gone (upstream's finalizer expectations): a stale copy
	// still holding the finalizer must not be counted twice, nor the
	// Job's possibly stale status be used to create pods meanwhile.
	released map[types.UID]types.UID
	// deleting are the pods this controller deletes, until the cache
	// shows them deleting or gone (upstream's deletion expectations):
	// meanwhile a stale copy would look active. Like upstream's, they
	// expire (a pod already deleting when deleted again shows no change).
	deleting map[types.UID]deletion
	// writes are this controller's own writes that a Job's sync waits to
	// see in the caches.
	writes *writes
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("job controller: Client is required")
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = 10 * time.Second
	}
	if opts.BackoffLimit <= 0 {
		opts.BackoffLimit = 10 * time.Minute
	}
	if opts.Workers <= 0 {
		opts.Workers = 5
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{client: opts.Client, backoff: opts.BackoffBase, backoffMax: opts.BackoffLimit, workers: opts.Workers, now: opts.Now,
		queue: workqueue.New[string](workqueue.Options{}), pending: map[types.UID]int{}, backoffs: map[types.UID]BackoffRecord{}, released: map[types.UID]types.UID{}, deleting: map[types.UID]deletion{},
		writes:   newWrites(),
		recorder: events.New(events.Options{Client: opts.Client, Component: "job-controller"})}
	var err error
	c.jobs, err = informer.New(informer.Options[*batchv1.Job]{
		Name: "jobs", ListerWatcher: listwatch.FromTypedClient(opts.Client.BatchV1().Jobs(""), nil),
		Indexers: map[string]listwatch.IndexFunc[*batchv1.Job]{namespaceIndex: byNamespace[*batchv1.Job]},
		Handlers: informer.Handlers[*batchv1.Job]{
			OnAdd:    func(j *batchv1.Job) { c.queue.Add(key(j)) },
			OnUpdate: func(_, j *batchv1.Job) { c.queue.Add(key(j)) },
			OnDelete: func(j *batchv1.Job) { c.forget(j.UID); c.queue.Add(key(j)); c.jobGone(j) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.pods, err = informer.New(informer.Options[*corev1.Pod]{
		Name: "pods", ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers: map[string]listwatch.IndexFunc[*corev1.Pod]{
			ownerIndex: func(p *corev1.Pod) ([]string, error) {
				if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == kind.Kind {
					return []string{string(ref.UID)}, nil
				}
				return nil, nil
			},
			namespaceIndex: byNamespace[*corev1.Pod],
		},
		Handlers: informer.Handlers[*corev1.Pod]{
			OnAdd: func(p *corev1.Pod) {
				if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == kind.Kind {
					c.mu.Lock()
					if c.pending[ref.UID] > 0 {
						c.pending[ref.UID]--
					}
					c.mu.Unlock()
				}
				if p.DeletionTimestamp != nil {
					c.seenDeleted(p.UID)
				}
				c.podChanged(nil, p)
				c.orphanChanged(p, p.DeletionTimestamp != nil)
			},
			OnUpdate: func(old, p *corev1.Pod) {
				if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
					c.seenReleased(p.UID)
				}
				if p.DeletionTimestamp != nil {
					c.seenDeleted(p.UID)
				}
				c.podChanged(old, p)
				c.orphanChanged(p, p.DeletionTimestamp != nil)
			},
			OnDelete: func(p *corev1.Pod) { c.seenReleased(p.UID); c.seenDeleted(p.UID); c.podChanged(nil, p) },
		},
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func key(m metav1.Object) string { return m.GetNamespace() + "/" + m.GetName() }

func (c *Controller) forget(uid types.UID) {
	c.mu.Lock()
	delete(c.pending, uid)
	delete(c.backoffs, uid)
	c.mu.Unlock()
	c.writes.forget(uid)
}

// lastSync is how far each cache has read, for writes.ready.
func (c *Controller) lastSync(resource string) string {
	if resource == resJobs {
		return c.jobs.LastSyncResourceVersion()
	}
	return c.pods.LastSyncResourceVersion()
}

// expected is what a Job's sync still waits to observe of its own writes.
type expected struct {
	// pending counts creations not yet seen.
	pending int
	// released are the pods whose finalizer removal is not yet seen.
	released map[types.UID]bool
	// deleting counts the deletions not yet seen.
	deleting int
}

func (c *Controller) expectations(jobUID types.UID) expected {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := expected{pending: c.pending[jobUID], released: map[types.UID]bool{}}
	for pod, owner := range c.released {
		if owner == jobUID {
			e.released[pod] = true
		}
	}
	for pod, d := range c.deleting {
		switch {
		case c.now().Sub(d.at) > deletionExpiry:
			delete(c.deleting, pod)
		case d.job == jobUID:
			e.deleting++
		}
	}
	return e
}

func (c *Controller) seenReleased(uid types.UID) {
	c.mu.Lock()
	delete(c.released, uid)
	c.mu.Unlock()
}

// deletion is an expected deletion: of a pod of job, asked for at at.
type deletion struct {
	job types.UID
	at  time.Time
}

// deletionExpiry is how long a deletion is waited for at most.
const deletionExpiry = time.Minute

func (c *Controller) seenDeleted(uid types.UID) {
	c.mu.Lock()
	delete(c.deleting, uid)
	c.mu.Unlock()
}

// Run syncs Jobs until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.queue.ShutDown()
	wg.Go(func() { c.recorder.Run(ctx) })
	wg.Go(func() { c.jobs.Run(ctx) })
	wg.Go(func() { c.pods.Run(ctx) })
	if err := informer.WaitForSync(ctx, c.jobs, c.pods); err != nil {
		return
	}
	for range c.workers {
		wg.Go(func() {
			c.queue.Work(ctx, c.sync, func(k string, err error) {
				klog.V(2).InfoS("job controller: will retry", "job", k, "err", err)
			})
		})
	}
	<-ctx.Done()
}

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *Controller) WaitIdle(ctx context.Context) error {
	if err := informer.WaitForSync(ctx, c.jobs, c.pods); err != nil {
		return err
	}
	return c.queue.WaitIdle(ctx)
}

func condition(s *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t && s.Conditions[i].Status == corev1.ConditionTrue {
			return &s.Conditions[i]
		}
	}
	return nil
}

func setCondition(s *batchv1.JobStatus, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) {
	for i := range s.Conditions {
		c := &s.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status == status && c.Reason == reason && c.Message == msg {
			return
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message, c.LastProbeTime = status, reason, msg, metav1.NewTime(now)
		return
	}
	s.Conditions = append(s.Conditions, batchv1.JobCondition{Type: t, Status: status, Reason: reason, Message: msg,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)})
}

func finished(s *batchv1.JobStatus) bool {
	return condition(s, batchv1.JobComplete) != nil || condition(s, batchv1.JobFailed) != nil
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func index(p *corev1.Pod) (int, bool) {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

func indexed(j *batchv1.Job) bool {
	return j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion
}

// MaxPodCreateDeletePerSync bounds the pods one sync creates, as upstream.
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
	completions                int // Indexed only
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
		case p.DeletionTimestamp != nil && !terminal(p):
			st.terminating = append(st.terminating, p)
		case !terminal(p) && p.DeletionTimestamp == nil:
			st.active = append(st.active, p)
			if replicaset.Ready(p) {
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
	for _, p := range st.tracked {
		failed := PodFailed(j, p)
		if !st.canRelease(ending, p, failed) {
			continue
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
		if len(st.active)+len(st.terminating) == 0 && len(u.Succeeded)+len(u.Failed) == 0 {
			if ending.Type == batchv1.JobFailureTarget {
				setCondition(s, batchv1.JobFailed, corev1.ConditionTrue, ending.Reason, ending.Message, now)
				c.recorder.Event(j, kind.Kind, corev1.EventTypeWarning, ending.Reason, ending.Message)
			} else {
				setCondition(s, batchv1.JobComplete, corev1.ConditionTrue, ending.Reason, ending.Message, now)
				s.CompletionTime = ptrTime(now)
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
	succeeded := s.Succeeded + int32(len(s.UncountedTerminatedPods.Succeeded)+len(st.newSucceeded))
	if Succeeded(j, succeeded, len(st.completed), len(st.active)) {
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

// manage deletes the pods a Job has too many of (all of them while it is
// suspended, duplicates of an index first), or creates those it lacks,
// after its back-off (per index, with backoffLimitPerIndex); never both in
// one sync, and nothing while its own last creations and deletions are not
// yet seen. It returns the active pods it deleted.
func (c *Controller) manage(ctx context.Context, st *jobState) ([]*corev1.Pod, error) {
	j, s := st.j, st.s
	if st.exp.pending > 0 || st.exp.deleting > 0 {
		return nil, nil // wait to see our own creations and deletions
	}
	if len(st.exp.released) > 0 {
		// Pods it counted are not yet seen released: the Job's cached
		// status may predate that count too. Decide once they are.
		c.queue.AddAfter(key(j), 100*time.Millisecond)
		return nil, nil
	}
	succeeded := s.Succeeded + int32(len(s.UncountedTerminatedPods.Succeeded))
	if indexed(j) {
		succeeded = int32(len(st.completed))
	}
	want := int(WantActive(j, succeeded))
	switch {
	case suspended(j):
		want = 0
	case j.Spec.Completions == nil && succeeded > 0:
		want = len(st.active) // what runs may finish; nothing more starts
	}
	if excess := ExcessPods(j, st.active, len(st.active)-want, st.now); len(excess) > 0 {
		excess = excess[:min(len(excess), maxPodCreatesPerSync)]
		// Their finalizers go first: a pod the Job stops is not a failure.
		if err := c.releaseFinalizers(ctx, j.UID, excess); err != nil {
			return nil, err
		}
		c.deletePods(ctx, j, excess)
		return excess, nil
	}
	diff := want - len(st.active)
	if onlyReplaceFailed(j) {
		diff -= len(st.terminating) // replaced once they have failed
	}
	diff = min(diff, maxPodCreatesPerSync)
	if diff <= 0 {
		return nil, nil
	}
	if !perIndex(j) {
		if wait := Remaining(st.now, st.backoff.FailuresAfterLastSuccess, st.backoff.LastFailure, c.backoff, c.backoffMax); wait > 0 {
			c.queue.AddAfter(key(j), wait)
			return nil, nil
		}
	}
	var toCreate []int // completion indexes, or -1 for NonIndexed
	if indexed(j) {
		taken := maps.Clone(st.completed)
		maps.Copy(taken, st.failedIndexes)
		busy := st.active
		if onlyReplaceFailed(j) {
			busy = append(slices.Clone(busy), st.terminating...)
		}
		for _, p := range busy {
			if i, ok := index(p); ok {
				taken[i] = true
			}
		}
		toCreate = FirstPendingIndexes(st.completions, diff, taken)
		if perIndex(j) {
			var now []int
			var soonest time.Duration
			for _, i := range toCreate {
				wait := RemainingForIndex(st.now, st.delayed[i], c.backoff, c.backoffMax)
				if wait == 0 {
					now = append(now, i)
				} else if soonest == 0 || wait < soonest {
					soonest = wait
				}
			}
			if len(now) == 0 && soonest > 0 {
				c.queue.AddAfter(key(j), soonest)
				return nil, nil
			}
			toCreate = now
		}
	} else {
		for range diff {
			toCreate = append(toCreate, -1)
		}
	}
	if len(toCreate) == 0 {
		return nil, nil
	}
	c.mu.Lock()
	c.pending[j.UID] += len(toCreate)
	c.mu.Unlock()
	var next int
	var nextMu sync.Mutex
	done, err := replicaset.SlowStart(len(toCreate), func() error {
		nextMu.Lock()
		i := toCreate[next]
		next++
		nextMu.Unlock()
		var replaced *corev1.Pod
		if i >= 0 {
			replaced = st.delayed[i]
		}
		return c.createPod(ctx, j, i, replaced)
	})
	if missed := len(toCreate) - done; missed > 0 {
		c.mu.Lock()
		c.pending[j.UID] = max(0, c.pending[j.UID]-missed)
		c.mu.Unlock()
	}
	return nil, err
}

// createPod creates a pod of the Job, of completion index idx (-1 for
// NonIndexed); with backoffLimitPerIndex it carries its index's failure
// counts, those of the failed pod it replaces.
func (c *Controller) createPod(ctx context.Context, j *batchv1.Job, idx int, replaced *corev1.Pod) error {
	if err := ctx.Err(); err != nil {
		return err // stopping: start no more
	}
	// Seen through once sent, so a successor never lists before it lands.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	t := j.Spec.Template.DeepCopy()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: j.Name + "-", Namespace: j.Namespace, Labels: t.Labels, Annotations: t.Annotations,
			Finalizers:      append(t.Finalizers, batchv1.JobTrackingFinalizer),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(j, kind)},
		},
		Spec: t.Spec,
	}
	if idx >= 0 {
		v := strconv.Itoa(idx)
		p.GenerateName = fmt.Sprintf("%s-%d-", j.Name, idx)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Labels[batchv1.JobCompletionIndexAnnotation] = v
		p.Annotations[batchv1.JobCompletionIndexAnnotation] = v
		if perIndex(j) {
			counted, ignored := NextIndexFailureCounts(j, replaced)
			p.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(counted))
			if ignored > 0 {
				p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
			}
		}
		p.Spec.Hostname = fmt.Sprintf("%s-%d", j.Name, idx)
		env := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			APIVersion: "v1", FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation)}}}
		for i := range p.Spec.InitContainers {
			p.Spec.InitContainers[i].Env = append(p.Spec.InitContainers[i].Env, env)
		}
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].Env = append(p.Spec.Containers[i].Env, env)
		}
	}
	created, err := c.client.CoreV1().Pods(j.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		c.recorder.Event(j, kind.Kind, corev1.EventTypeWarning, "FailedCreate", fmt.Sprintf("Error creating: %v", err))
		return err
	}
	c.writes.wroteAt(j.UID, resPods, created.ResourceVersion)
	c.recorder.Event(j, kind.Kind, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: "+created.Name)
	return nil
}

// deletePods deletes pods, each expected until the cache shows it
// deleting or gone.
func (c *Controller) deletePods(ctx context.Context, j *batchv1.Job, pods []*corev1.Pod) {
	for _, p := range pods {
		uid := p.UID
		c.mu.Lock()
		c.deleting[uid] = deletion{job: j.UID, at: c.now()}
		c.mu.Unlock()
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil {
			c.seenDeleted(uid) // no deletion to see
			continue
		}
		c.recorder.Event(j, kind.Kind, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: "+p.Name)
	}
}

// releaseFinalizers removes the job-tracking finalizer from pods, with a
// JSON patch test so only that finalizer goes.
func (c *Controller) releaseFinalizers(ctx context.Context, jobUID types.UID, pods []*corev1.Pod) error {
	for _, p := range pods {
		i := slices.Index(p.Finalizers, batchv1.JobTrackingFinalizer)
		if i < 0 {
			continue
		}
		patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/%d","value":%q},{"op":"remove","path":"/metadata/finalizers/%d"}]`, i, batchv1.JobTrackingFinalizer, i)
		// Expected before the patch is sent: the cache may show its
		// result before Patch returns. An orphan's (no jobUID) concerns
		// no Job's sync.
		if jobUID != "" {
			c.mu.Lock()
			c.released[p.UID] = jobUID
			c.mu.Unlock()
		}
		out, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
		if err == nil && jobUID != "" {
			c.writes.wroteAt(jobUID, resPods, out.ResourceVersion)
		}
		if apierrors.IsNotFound(err) {
			c.seenReleased(p.UID)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			c.seenReleased(p.UID)
			return fmt.Errorf("remove finalizer of pod %s: %w", key(p), err)
		}
	}
	return nil
}

// expire deletes a finished Job whose ttlSecondsAfterFinished has passed,
// as upstream's ttl-after-finished controller: after a fresh read shows it
// still expired (its TTL may have changed since the cache saw it), in the
// foreground (its pods go first) with a uid precondition.
func (c *Controller) expire(ctx context.Context, j *batchv1.Job, now time.Time) error {
	due, ok := ExpiresAt(j)
	if !ok || j.DeletionTimestamp != nil {
		return nil
	}
	if now.Before(due) {
		c.queue.AddAfter(key(j), due.Sub(now))
		return nil
	}
	fresh, err := c.client.BatchV1().Jobs(j.Namespace).Get(ctx, j.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read job %s before its TTL deletion: %w", key(j), err)
	}
	if fresh.UID != j.UID || fresh.DeletionTimestamp != nil {
		return nil
	}
	if due, ok = ExpiresAt(fresh); !ok {
		return nil
	}
	if now.Before(due) {
		c.queue.AddAfter(key(j), due.Sub(now))
		return nil
	}
	fg, uid := metav1.DeletePropagationForeground, j.UID
	err = c.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &fg, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// ExpiresAt is when a finished Job's ttlSecondsAfterFinished passes: that
// long after its Complete or Failed condition turned True. It is false
// for a Job without a TTL or not finished.
func ExpiresAt(j *batchv1.Job) (time.Time, bool) {
	if j.Spec.TTLSecondsAfterFinished == nil {
		return time.Time{}, false
	}
	for _, cond := range j.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			return cond.LastTransitionTime.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second), true
		}
	}
	return time.Time{}, false
}

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
