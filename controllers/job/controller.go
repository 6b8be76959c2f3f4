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

	"github.com/kite-project/kite/controllers/controller"
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
	// TTLClient reads and deletes Jobs whose ttlSecondsAfterFinished has
	// passed: upstream's ttl-after-finished controller's identity, which
	// may delete Jobs where the job controller's may not. Nil means
	// Client.
	TTLClient kubernetes.Interface
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
	ttlClient           kubernetes.Interface
	backoff, backoffMax time.Duration
	maxUncounted        int
	now                 func() time.Time
	loop                *controller.Loop[string]
	queue               *workqueue.Queue[string]
	recorder            *events.Recorder
	jobs                *informer.Informer[*batchv1.Job]
	pods                *informer.Informer[*corev1.Pod]

	// expect are the creations and deletions of each Job's pods (by the
	// Job's uid) not yet seen in the cache. A creation of an Indexed Job's
	// pod is named by its completion index.
	expect *controller.Expectations

	// mu guards the fields below.
	mu sync.Mutex
	// backoffs are the Jobs' pod creation back-off records.
	backoffs map[types.UID]BackoffRecord
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
	if opts.TTLClient == nil {
		opts.TTLClient = opts.Client
	}
	c := &Controller{client: opts.Client, ttlClient: opts.TTLClient, backoff: opts.BackoffBase, backoffMax: opts.BackoffLimit, maxUncounted: opts.MaxUncountedPods, now: opts.Now,
		queue: workqueue.New[string](workqueue.Options{}), expect: controller.NewExpectations(opts.Now), backoffs: map[types.UID]BackoffRecord{}, released: map[types.UID]types.UID{},
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
					c.expect.Created(string(ref.UID), creationName(p))
				}
				if p.DeletionTimestamp != nil {
					c.seenDeleted(p)
				}
				c.podChanged(nil, p)
				c.orphanChanged(p, p.DeletionTimestamp != nil)
			},
			OnUpdate: func(old, p *corev1.Pod) {
				if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
					c.seenReleased(p.UID)
				}
				if p.DeletionTimestamp != nil {
					c.seenDeleted(p)
				}
				c.podChanged(old, p)
				c.orphanChanged(p, p.DeletionTimestamp != nil)
			},
			OnDelete: func(p *corev1.Pod) { c.seenReleased(p.UID); c.seenDeleted(p); c.podChanged(nil, p) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "job-controller", Queue: c.queue, Informers: []controller.Informer{c.jobs, c.pods},
		Recorder: c.recorder, Workers: opts.Workers, Sync: c.sync}
	return c, nil
}

var key = controller.Key

// Run syncs Jobs until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *Controller) forget(uid types.UID) {
	c.expect.Forget(string(uid))
	c.mu.Lock()
	delete(c.backoffs, uid)
	c.mu.Unlock()
	c.writes.forget(uid)
}

// creationName is what a pod's creation is expected as: its completion
// index, or "" for a NonIndexed Job's pod.
func creationName(p *corev1.Pod) string {
	if i, ok := index(p); ok {
		return strconv.Itoa(i)
	}
	return ""
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
	// satisfied: every creation and deletion is seen, or has expired.
	// Until then no pod is created: none for an index whose pod is
	// expected, nor beyond the count while one is.
	satisfied bool
	// released are the pods whose finalizer removal is not yet seen.
	released map[types.UID]bool
}

func (c *Controller) expectations(jobUID types.UID) expected {
	e := expected{satisfied: c.expect.Satisfied(string(jobUID)), released: map[types.UID]bool{}}
	c.mu.Lock()
	defer c.mu.Unlock()
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

// seenDeleted records that the cache shows p deleting or gone.
func (c *Controller) seenDeleted(p *corev1.Pod) {
	if ref := metav1.GetControllerOf(p); ref != nil {
		c.expect.Deleted(string(ref.UID), string(p.UID))
	}
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
