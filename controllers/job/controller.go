// Package job runs Jobs' pods to completion: the job of
// kube-controller-manager's job controller, with its TTL-after-finished
// controller's work on finished Jobs.
//
// Pods are created (slow start, with the batch.kubernetes.io/job-tracking
// finalizer) up to parallelism and the completions left, after an
// exponential back-off once pods have failed; Indexed Jobs give each pod
// its completion index (label, annotation and JOB_COMPLETION_INDEX).
// Finished pods are accounted in two steps, as upstream, so none is
// counted twice or lost across restarts: their uids go into
// status.uncountedTerminatedPods, their finalizer is removed, then they
// move into succeeded/failed. A Job fails on backoffLimit,
// activeDeadlineSeconds or a FailJob rule of its podFailurePolicy (Ignore
// rules do not count the failure), first with FailureTarget while its
// pods are stopped, then Failed; it succeeds with SuccessCriteriaMet,
// then Complete. A suspended Job has no pods. ttlSecondsAfterFinished
// deletes a finished Job (in the background) once it passes.
package job

import (
	"context"
	"fmt"
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
	// next pod; 0 means upstream's 10 s and 6 min.
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
	// lastFailure is when each Job's latest failed pod was seen.
	lastFailure map[types.UID]time.Time
	// released are the pods (and their Job) whose job-tracking finalizer
	// this controller removes, and so counts, until the cache shows them
	// without it or gone (upstream's finalizer expectations): a stale copy
	// still holding the finalizer must not be counted twice, nor the
	// Job's possibly stale status be used to create pods meanwhile.
	released map[types.UID]types.UID
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
		opts.BackoffLimit = 6 * time.Minute
	}
	if opts.Workers <= 0 {
		opts.Workers = 5
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{client: opts.Client, backoff: opts.BackoffBase, backoffMax: opts.BackoffLimit, workers: opts.Workers, now: opts.Now,
		queue: workqueue.New[string](workqueue.Options{}), pending: map[types.UID]int{}, lastFailure: map[types.UID]time.Time{}, released: map[types.UID]types.UID{},
		writes:   newWrites(),
		recorder: events.New(events.Options{Client: opts.Client, Component: "job-controller"})}
	var err error
	c.jobs, err = informer.New(informer.Options[*batchv1.Job]{
		Name: "jobs", ListerWatcher: listwatch.FromTypedClient(opts.Client.BatchV1().Jobs(""), nil),
		Handlers: informer.Handlers[*batchv1.Job]{
			OnAdd:    func(j *batchv1.Job) { c.queue.Add(key(j)) },
			OnUpdate: func(_, j *batchv1.Job) { c.queue.Add(key(j)) },
			OnDelete: func(j *batchv1.Job) { c.forget(j.UID); c.queue.Add(key(j)) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.pods, err = informer.New(informer.Options[*corev1.Pod]{
		Name: "pods", ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers: map[string]listwatch.IndexFunc[*corev1.Pod]{ownerIndex: func(p *corev1.Pod) ([]string, error) {
			if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == kind.Kind {
				return []string{string(ref.UID)}, nil
			}
			return nil, nil
		}},
		Handlers: informer.Handlers[*corev1.Pod]{
			OnAdd: func(p *corev1.Pod) {
				if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == kind.Kind {
					c.mu.Lock()
					if c.pending[ref.UID] > 0 {
						c.pending[ref.UID]--
					}
					c.mu.Unlock()
				}
				c.podChanged(p)
			},
			OnUpdate: func(_, p *corev1.Pod) {
				if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
					c.seenReleased(p.UID)
				}
				c.podChanged(p)
			},
			OnDelete: func(p *corev1.Pod) { c.seenReleased(p.UID); c.podChanged(p) },
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
	delete(c.lastFailure, uid)
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
	return e
}

func (c *Controller) seenReleased(uid types.UID) {
	c.mu.Lock()
	delete(c.released, uid)
	c.mu.Unlock()
}

func (c *Controller) podChanged(p *corev1.Pod) {
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == kind.Kind && ref.APIVersion == kind.GroupVersion().String() {
		c.queue.Add(p.Namespace + "/" + ref.Name)
	}
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

func (c *Controller) sync(ctx context.Context, k string) error {
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
	s := j.Status.DeepCopy()
	if s.StartTime == nil && (j.Spec.Suspend == nil || !*j.Spec.Suspend) {
		s.StartTime = ptrTime(now)
	}
	if s.UncountedTerminatedPods == nil {
		s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	u := s.UncountedTerminatedPods
	completed := map[int]bool{}
	if indexed(j) && j.Spec.Completions != nil {
		completed = ParseIndexes(s.CompletedIndexes, int(*j.Spec.Completions))
	}

	// Step 1: finished pods still holding the finalizer are noted as
	// uncounted (or ignored, by an Ignore rule).
	var release []*corev1.Pod
	var failJob *PolicyMatch
	for _, p := range pods {
		if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) || exp.released[p.UID] {
			continue
		}
		succeeded := p.Status.Phase == corev1.PodSucceeded
		// A deleted pod counts as failed, as upstream's isPodFailed (it
		// may never reach Failed), unless only Failed pods are replaced.
		failed := p.Status.Phase == corev1.PodFailed || (p.DeletionTimestamp != nil && !succeeded && countsDeleted(j))
		if !succeeded && !failed {
			continue
		}
		if slices.Contains(u.Succeeded, p.UID) || slices.Contains(u.Failed, p.UID) {
			release = append(release, p)
			continue
		}
		if succeeded {
			u.Succeeded = append(u.Succeeded, p.UID)
			if i, ok := index(p); ok && indexed(j) && i < int(*j.Spec.Completions) {
				completed[i] = true
			}
		} else {
			m := MatchPodFailurePolicy(j.Spec.PodFailurePolicy, p)
			switch {
			case m != nil && m.Action == batchv1.PodFailurePolicyActionIgnore:
				release = append(release, p)
				continue
			case m != nil && m.Action == batchv1.PodFailurePolicyActionFailJob && failJob == nil:
				failJob = m
			}
			u.Failed = append(u.Failed, p.UID)
			c.mu.Lock()
			c.lastFailure[j.UID] = now
			c.mu.Unlock()
		}
		release = append(release, p)
	}
	s.CompletedIndexes = FormatIndexes(completed)
	if err := c.writeStatus(ctx, j, s); err != nil {
		return err
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

	var active, ready, terminating []*corev1.Pod
	for _, p := range pods {
		switch {
		case p.DeletionTimestamp != nil && !terminal(p):
			terminating = append(terminating, p)
		case !terminal(p) && p.DeletionTimestamp == nil:
			active = append(active, p)
			if replicaset.Ready(p) {
				ready = append(ready, p)
			}
		}
	}

	// Has the Job reached an end?
	if condition(s, batchv1.JobFailureTarget) == nil && condition(s, batchv1.JobSuccessCriteriaMet) == nil {
		backoffLimit := int32(6)
		if j.Spec.BackoffLimit != nil {
			backoffLimit = *j.Spec.BackoffLimit
		}
		failedCount := s.Failed + int32(len(u.Failed))
		switch {
		case failJob != nil:
			setCondition(s, batchv1.JobFailureTarget, corev1.ConditionTrue, ReasonPodFailurePolicy, failJob.Message, now)
		case failedCount > backoffLimit:
			setCondition(s, batchv1.JobFailureTarget, corev1.ConditionTrue, ReasonBackoffLimitExceeded, msgBackoffLimit, now)
		case j.Spec.ActiveDeadlineSeconds != nil && s.StartTime != nil && !now.Before(s.StartTime.Add(time.Duration(*j.Spec.ActiveDeadlineSeconds)*time.Second)):
			setCondition(s, batchv1.JobFailureTarget, corev1.ConditionTrue, ReasonDeadlineExceeded, msgDeadline, now)
			c.recorder.Event(j, kind.Kind, corev1.EventTypeWarning, ReasonDeadlineExceeded, msgDeadline)
		case indexed(j) && j.Spec.SuccessPolicy != nil && successPolicyMet(j, completed):
			msg, _ := MatchSuccessPolicy(j.Spec.SuccessPolicy, *j.Spec.Completions, completed)
			setCondition(s, batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, ReasonSuccessPolicy, msg, now)
		case Succeeded(j, s.Succeeded+int32(len(u.Succeeded)), len(completed), len(active)):
			setCondition(s, batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, ReasonCompletionsReached, msgCompletions, now)
		}
	}
	ending := condition(s, batchv1.JobFailureTarget)
	if ending == nil {
		ending = condition(s, batchv1.JobSuccessCriteriaMet)
	}
	var manageErr error
	switch {
	case ending != nil:
		// Stop what still runs; the final condition comes once nothing
		// does and every pod is counted.
		c.deletePods(ctx, j, active)
		if len(active)+len(terminating) == 0 && len(u.Succeeded)+len(u.Failed) == 0 {
			if ending.Type == batchv1.JobFailureTarget {
				setCondition(s, batchv1.JobFailed, corev1.ConditionTrue, ending.Reason, ending.Message, now)
				c.recorder.Event(j, kind.Kind, corev1.EventTypeWarning, ending.Reason, ending.Message)
			} else {
				setCondition(s, batchv1.JobComplete, corev1.ConditionTrue, ending.Reason, ending.Message, now)
				s.CompletionTime = ptrTime(now)
				c.recorder.Event(j, kind.Kind, corev1.EventTypeNormal, "Completed", "Job completed")
			}
		}
		active = nil
	case j.Spec.Suspend != nil && *j.Spec.Suspend:
		c.deletePods(ctx, j, active)
		active = nil
		setCondition(s, batchv1.JobSuspended, corev1.ConditionTrue, ReasonSuspended, "Job suspended", now)
		s.StartTime = nil
	default:
		if cond := condition(s, batchv1.JobSuspended); cond != nil {
			setCondition(s, batchv1.JobSuspended, corev1.ConditionFalse, ReasonResumed, "Job resumed", now)
			s.StartTime = ptrTime(now)
		}
		manageErr = c.manage(ctx, j, s, exp, active, completed)
		if j.Spec.ActiveDeadlineSeconds != nil && s.StartTime != nil {
			c.queue.AddAfter(k, s.StartTime.Add(time.Duration(*j.Spec.ActiveDeadlineSeconds)*time.Second).Sub(now)+10*time.Millisecond)
		}
	}
	s.Active = int32(len(active))
	s.Ready = ptrInt32(int32(len(ready)))
	if ending != nil || (j.Spec.Suspend != nil && *j.Spec.Suspend) {
		s.Ready = ptrInt32(0)
	}
	s.Terminating = ptrInt32(int32(len(terminating)))
	if err := c.writeStatus(ctx, j, s); err != nil {
		return err
	}
	return manageErr
}

func successPolicyMet(j *batchv1.Job, completed map[int]bool) bool {
	_, met := MatchSuccessPolicy(j.Spec.SuccessPolicy, *j.Spec.Completions, completed)
	return met
}

func countsDeleted(j *batchv1.Job) bool {
	return j.Spec.PodFailurePolicy == nil && (j.Spec.PodReplacementPolicy == nil || *j.Spec.PodReplacementPolicy != batchv1.Failed)
}

func ptrTime(t time.Time) *metav1.Time { mt := metav1.NewTime(t); return &mt }
func ptrInt32(v int32) *int32          { return &v }

// manage creates the pods the Job lacks, after its back-off.
func (c *Controller) manage(ctx context.Context, j *batchv1.Job, s *batchv1.JobStatus, exp expected, active []*corev1.Pod, completed map[int]bool) error {
	c.mu.Lock()
	last, failedBefore := c.lastFailure[j.UID]
	c.mu.Unlock()
	if exp.pending > 0 {
		return nil // wait to see our own creations
	}
	if len(exp.released) > 0 {
		// Pods it counted are not yet seen released: the Job's cached
		// status may predate that count too. Decide once they are.
		c.queue.AddAfter(key(j), 100*time.Millisecond)
		return nil
	}
	var toCreate []int // completion indexes, or -1 for NonIndexed
	if indexed(j) {
		parallelism := int32(1)
		if j.Spec.Parallelism != nil {
			parallelism = *j.Spec.Parallelism
		}
		running := map[int]bool{}
		for _, p := range active {
			if i, ok := index(p); ok {
				running[i] = true
			}
		}
		for i := 0; i < int(*j.Spec.Completions) && len(active)+len(toCreate) < int(parallelism); i++ {
			if !completed[i] && !running[i] {
				toCreate = append(toCreate, i)
			}
		}
	} else {
		want := WantActive(j, s.Succeeded+int32(len(s.UncountedTerminatedPods.Succeeded)))
		for range int(want) - len(active) {
			toCreate = append(toCreate, -1)
		}
	}
	if len(toCreate) == 0 {
		return nil
	}
	if failures := int(s.Failed) + len(s.UncountedTerminatedPods.Failed); failures > 0 && failedBefore {
		if wait := last.Add(Backoff(failures, c.backoff, c.backoffMax)).Sub(c.now()); wait > 0 {
			c.queue.AddAfter(key(j), wait)
			return nil
		}
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
		return c.createPod(ctx, j, i)
	})
	if missed := len(toCreate) - done; missed > 0 {
		c.mu.Lock()
		c.pending[j.UID] = max(0, c.pending[j.UID]-missed)
		c.mu.Unlock()
	}
	return err
}

func (c *Controller) createPod(ctx context.Context, j *batchv1.Job, idx int) error {
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

func (c *Controller) deletePods(ctx context.Context, j *batchv1.Job, pods []*corev1.Pod) {
	for _, p := range pods {
		uid := p.UID
		err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err == nil {
			c.recorder.Event(j, kind.Kind, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: "+p.Name)
		}
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
		// result before Patch returns.
		c.mu.Lock()
		c.released[p.UID] = jobUID
		c.mu.Unlock()
		out, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
		if err == nil {
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

// expire deletes a finished Job whose ttlSecondsAfterFinished has passed.
func (c *Controller) expire(ctx context.Context, j *batchv1.Job, now time.Time) error {
	if j.Spec.TTLSecondsAfterFinished == nil || j.DeletionTimestamp != nil {
		return nil
	}
	var at time.Time
	for _, cond := range j.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			at = cond.LastTransitionTime.Time
		}
	}
	if due := at.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second); now.Before(due) {
		c.queue.AddAfter(key(j), due.Sub(now))
		return nil
	}
	bg, uid := metav1.DeletePropagationBackground, j.UID
	err := c.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
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
