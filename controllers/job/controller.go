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
	"slices"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

const ownerIndex = "owner"

const namespaceIndex = informer.NamespaceIndex

var kind = batchv1.SchemeGroupVersion.WithKind("Job")

// Options configure a Controller.
type Options struct {
	// Client watches Jobs and pods and writes them. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// BackoffBase and BackoffLimit bound the delay before a failed Job's
	// (or index's) next pod; 0 means upstream's 10 s and 10 min.
	BackoffBase, BackoffLimit time.Duration
	// Workers sync Jobs in parallel; 0 means 5.
	Workers int
	// MaxUncountedPods bounds status.uncountedTerminatedPods (and the
	// finalizers one sync removes); 0 means upstream's 500, about 20 KB
	// of uids.
	MaxUncountedPods int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Controller is the Job controller. Run drives it.
type Controller struct {
	client              kubernetes.Interface
	backoff, backoffMax time.Duration
	workers             int
	maxUncounted        int
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
	if opts.MaxUncountedPods <= 0 {
		opts.MaxUncountedPods = 500
	}
	c := &Controller{client: opts.Client, backoff: opts.BackoffBase, backoffMax: opts.BackoffLimit, workers: opts.Workers, maxUncounted: opts.MaxUncountedPods, now: opts.Now,
		queue: workqueue.New[string](workqueue.Options{}), pending: map[types.UID]int{}, backoffs: map[types.UID]BackoffRecord{}, released: map[types.UID]types.UID{}, deleting: map[types.UID]deletion{},
		writes:   newWrites(),
		recorder: events.New(events.Options{Client: opts.Client, Component: "job-controller"})}
	var err error
	c.jobs, err = informer.For(opts.Informers, informer.Options[*batchv1.Job]{
		Name: "jobs", Shape: informer.Shape{Resource: "jobs.batch"}, ListerWatcher: listwatch.FromTypedClient(opts.Client.BatchV1().Jobs(""), nil),
		Indexers: map[string]listwatch.IndexFunc[*batchv1.Job]{namespaceIndex: informer.ByNamespace[*batchv1.Job]},
		Handlers: informer.Handlers[*batchv1.Job]{
			OnAdd:    func(j *batchv1.Job) { c.queue.Add(key(j)) },
			OnUpdate: func(_, j *batchv1.Job) { c.queue.Add(key(j)) },
			OnDelete: func(j *batchv1.Job) { c.forget(j.UID); c.queue.Add(key(j)); c.jobGone(j) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.pods, err = informer.For(opts.Informers, informer.Options[*corev1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"}, ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers: map[string]listwatch.IndexFunc[*corev1.Pod]{
			ownerIndex: func(p *corev1.Pod) ([]string, error) {
				if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == kind.Kind {
					return []string{string(ref.UID)}, nil
				}
				return nil, nil
			},
			namespaceIndex: informer.ByNamespace[*corev1.Pod],
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
