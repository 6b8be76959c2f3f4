// Package scheduler places pods on nodes: Kite's kube-scheduler with the
// default profile's basic plugins.
//
// Schedule is the decision, a pure function of a pod and the nodes with
// the pods bound to them. Scheduler is the runner around it: it watches
// pods and nodes through informers, takes pods with no spec.nodeName
// whose schedulerName is its own, decides one pod at a time, assumes the
// pod on its node (so that the next decision counts it before the watch
// shows it bound), and binds through pods/binding on a pool of binders.
// A pod that fits nowhere gets PodScheduled=False (Unschedulable) and a
// FailedScheduling event, and is tried again when a node appears or
// changes, when a bound pod goes, or after five minutes.
package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// DefaultSchedulerName is the name pods get when they name no scheduler.
const DefaultSchedulerName = v1.DefaultSchedulerName

const (
	// unschedulableFlush is upstream's podMaxInUnschedulablePodsDuration:
	// an unschedulable pod is tried again at least this often.
	unschedulableFlush = 5 * time.Minute
)

// Options configure a Scheduler.
type Options struct {
	// Client watches pods and nodes, binds and records events. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// SchedulerName is the spec.schedulerName of the pods to place; ""
	// means DefaultSchedulerName.
	SchedulerName string
	// Binders is how many bindings may be in flight; 0 means 16.
	Binders int
	// Pick chooses among n equally scored nodes; nil picks at random.
	Pick func(n int) int
}

// Scheduler is the runner. Run drives it.
type Scheduler struct {
	client   kubernetes.Interface
	name     string
	pick     func(int) int
	binders  int
	loop     *controller.Loop[string]
	queue    *workqueue.Queue[string]
	pods     *informer.Informer[*v1.Pod]
	nodes    *informer.Informer[*v1.Node]
	recorder *events.Recorder
	binds    chan *v1.Pod
	volumes  *volumeCaches

	// mu guards the maps below; never held across a request.
	mu sync.Mutex
	// usage is what each node's pods take, and counted the version of
	// each pod (by namespace/name) that usage counts: the informer's for
	// a bound pod, the assumed copy for one being bound.
	usage   map[string]*Usage
	counted map[string]*v1.Pod
	// assumed are pods decided and being bound, or bound but not yet seen
	// bound by the informer, with spec.nodeName set.
	assumed map[string]*v1.Pod
	// unschedulable are pods that fit nowhere, with the time they were
	// found so; they wait for a change of the cluster.
	unschedulable map[string]time.Time
	// inFlight counts bindings not yet answered.
	inFlight int
	// plans are the volume plans of assumed pods (by key), carried out
	// before their binding; assumedVolumes the volumes they take.
	plans          map[string]*VolumePlan
	assumedVolumes map[string]*v1.PersistentVolume
}

// New returns a Scheduler.
func New(opts Options) (*Scheduler, error) {
	if opts.Client == nil {
		return nil, errors.New("scheduler: Client is required")
	}
	if opts.SchedulerName == "" {
		opts.SchedulerName = DefaultSchedulerName
	}
	if opts.Binders <= 0 {
		opts.Binders = 16
	}
	if opts.Pick == nil {
		opts.Pick = rand.IntN
	}
	s := &Scheduler{
		client: opts.Client, name: opts.SchedulerName, pick: opts.Pick, binders: opts.Binders,
		queue:    workqueue.New[string](workqueue.Options{BaseDelay: time.Second, MaxDelay: 10 * time.Second}),
		recorder: events.New(events.Options{Client: opts.Client, Component: opts.SchedulerName}),
		binds:    make(chan *v1.Pod),
		assumed:  map[string]*v1.Pod{}, unschedulable: map[string]time.Time{},
		usage: map[string]*Usage{}, counted: map[string]*v1.Pod{},
		plans: map[string]*VolumePlan{}, assumedVolumes: map[string]*v1.PersistentVolume{},
	}
	var err error
	s.pods, err = informer.For(opts.Informers, informer.Options[*v1.Pod]{
		Name: "pods",
		// Terminal pods hold no resources, as upstream's pod informer.
		// So this is a cache of its own (as kube-scheduler has its own),
		// not the controllers' one of every pod.
		Shape:         informer.Shape{Resource: "pods", FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Handlers:      informer.Handlers[*v1.Pod]{OnAdd: s.podAdded, OnUpdate: s.podUpdated, OnDelete: s.podDeleted},
	})
	if err != nil {
		return nil, err
	}
	s.nodes, err = informer.For(opts.Informers, informer.Options[*v1.Node]{
		Name: "nodes", Shape: informer.Shape{Resource: "nodes"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Nodes(), nil),
		Handlers: informer.Handlers[*v1.Node]{
			OnAdd: func(*v1.Node) { s.retryUnschedulable(false) },
			OnUpdate: func(old, n *v1.Node) {
				if nodeChangeMatters(old, n) {
					s.retryUnschedulable(false)
				}
			},
		},
	})
	if err != nil {
		return nil, err
	}
	if s.volumes, err = newVolumeCaches(opts, s); err != nil {
		return nil, err
	}
	// One worker decides, one pod at a time; binders bind beside it and
	// retry a pod (AddRateLimited) or forget its failures themselves.
	background := []func(context.Context){s.retryUnschedulableLoop}
	for range s.binders {
		background = append(background, s.bindLoop)
	}
	s.loop = &controller.Loop[string]{Name: opts.SchedulerName, Queue: s.queue, Informers: append([]controller.Informer{s.pods, s.nodes}, s.volumes.informers()...),
		Recorder: s.recorder, Background: background, OwnRetries: true,
		Sync: func(ctx context.Context, k string) error { s.scheduleOne(ctx, k); return nil }}
	return s, nil
}

// retryUnschedulableLoop tries the pods unschedulable for long again
// every 30 s.
func (s *Scheduler) retryUnschedulableLoop(ctx context.Context) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.retryUnschedulable(true)
		}
	}
}

// Run schedules until ctx ends.
func (s *Scheduler) Run(ctx context.Context) { s.loop.Run(ctx) }

// WaitIdle returns once both caches are listed, no pod is queued or being
// decided, and no binding is in flight. Unschedulable pods wait for a
// change and do not count.
func (s *Scheduler) WaitIdle(ctx context.Context) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		// The queue first: a pod being decided keeps it busy until its
		// binding is in flight, so a binding is never missed between the
		// two reads.
		idle := s.pods.HasSynced() && s.nodes.HasSynced() && s.volumes.synced() && s.queue.Idle()
		s.mu.Lock()
		inFlight := s.inFlight
		s.mu.Unlock()
		if idle && inFlight == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func key(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// responsible says whether pod waits for this scheduler.
func (s *Scheduler) responsible(p *v1.Pod) bool {
	name := p.Spec.SchedulerName
	if name == "" {
		name = DefaultSchedulerName
	}
	return p.Spec.NodeName == "" && name == s.name && p.DeletionTimestamp == nil && len(p.Spec.SchedulingGates) == 0
}

func (s *Scheduler) podAdded(p *v1.Pod) {
	if p.Spec.NodeName != "" {
		s.bound(p)
		return
	}
	if s.responsible(p) {
		s.queue.Add(key(p))
	}
}

func (s *Scheduler) podUpdated(old, p *v1.Pod) {
	k := key(p)
	if p.Spec.NodeName != "" {
		s.bound(p)
		return
	}
	if !s.responsible(p) {
		return
	}
	s.mu.Lock()
	_, waiting := s.unschedulable[k]
	s.mu.Unlock()
	// Our own status write must not bring the pod straight back.
	if waiting && reflect.DeepEqual(old.Spec, p.Spec) && reflect.DeepEqual(old.Labels, p.Labels) {
		return
	}
	s.queue.Add(k)
}

func (s *Scheduler) podDeleted(p *v1.Pod) {
	k := key(p)
	s.mu.Lock()
	_, held := s.counted[k]
	s.uncountLocked(k)
	delete(s.assumed, k)
	delete(s.unschedulable, k)
	s.mu.Unlock()
	if held {
		s.retryUnschedulable(false)
	}
}

// bound counts a pod the informer shows bound, in place of its assumed
// copy if it had one.
func (s *Scheduler) bound(p *v1.Pod) {
	k := key(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.assumed, k)
	delete(s.unschedulable, k)
	s.countLocked(k, p)
}

func (s *Scheduler) countLocked(k string, p *v1.Pod) {
	s.uncountLocked(k)
	u := s.usage[p.Spec.NodeName]
	if u == nil {
		u = &Usage{}
		s.usage[p.Spec.NodeName] = u
	}
	u.Add(p)
	s.counted[k] = p
}

func (s *Scheduler) uncountLocked(k string) {
	old, ok := s.counted[k]
	if !ok {
		return
	}
	delete(s.counted, k)
	if u := s.usage[old.Spec.NodeName]; u != nil {
		u.Remove(old)
		if u.pods == 0 {
			delete(s.usage, old.Spec.NodeName)
		}
	}
}

// retryUnschedulable queues the unschedulable pods again: all of them, or
// (onlyOld) those that have waited unschedulableFlush.
func (s *Scheduler) retryUnschedulable(onlyOld bool) {
	now := time.Now()
	s.mu.Lock()
	var keys []string
	for k, since := range s.unschedulable {
		if !onlyOld || now.Sub(since) >= unschedulableFlush {
			keys = append(keys, k)
			delete(s.unschedulable, k)
		}
	}
	s.mu.Unlock()
	for _, k := range keys {
		s.queue.Add(k)
	}
}

// nodeChangeMatters says whether a node update can make a pod fit: a
// heartbeat cannot.
func nodeChangeMatters(old, n *v1.Node) bool {
	return !reflect.DeepEqual(old.Spec, n.Spec) || !reflect.DeepEqual(old.Labels, n.Labels) ||
		!reflect.DeepEqual(old.Status.Allocatable, n.Status.Allocatable)
}

// scheduleOne decides for one pod, then assumes it and hands it to a
// binder, or records why it fits nowhere.
func (s *Scheduler) scheduleOne(ctx context.Context, k string) {
	pod, ok := s.pods.Store().Get(k)
	if !ok || !s.responsible(pod) {
		return
	}
	nodes := s.nodes.Store().SortedList()
	infos := make([]*NodeInfo, len(nodes))
	s.mu.Lock()
	if _, assumed := s.assumed[k]; assumed {
		s.mu.Unlock()
		return
	}
	if c, counted := s.counted[k]; counted && c.UID == pod.UID {
		// The informer showed it bound already: this copy is stale (a
		// re-list at an older version); deciding again would bind it
		// twice and, on the conflict, forget its usage.
		s.mu.Unlock()
		return
	}
	// The decision reads the usage under the lock: it is pure CPU work
	// over one entry per node.
	for i, n := range nodes {
		u := s.usage[n.Name]
		if u == nil {
			u = &Usage{}
		}
		infos[i] = &NodeInfo{Node: n, Usage: u}
	}
	node, plan, err := ScheduleWithVolumes(pod, infos, s.pick, s.volumes.view(pod, s.assumedVolumes))
	var fe *FitError
	if errors.As(err, &fe) {
		s.unschedulable[k] = time.Now()
		s.mu.Unlock()
		s.unschedulableCondition(ctx, pod, fe.Error())
		return
	}
	bound := pod.DeepCopy()
	bound.Spec.NodeName = node
	s.assumed[k] = bound
	s.assumeVolumesLocked(k, plan)
	s.countLocked(k, bound)
	delete(s.unschedulable, k)
	s.inFlight++
	s.mu.Unlock()
	select {
	case s.binds <- bound:
	case <-ctx.Done():
	}
}

func (s *Scheduler) bindLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case pod := <-s.binds:
			s.bind(ctx, pod)
		}
	}
}

func (s *Scheduler) bind(ctx context.Context, pod *v1.Pod) {
	k := key(pod)
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	if err := s.carryOut(ctx, pod); err != nil {
		// Not wrapped: a conflict on a claim or volume is no sign that
		// the pod is gone or bound, it is tried again.
		s.bindFailed(ctx, pod, fmt.Errorf("volume binding: %v", err))
		return
	}
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: pod.Spec.NodeName},
	}
	err := s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{})
	if err != nil {
		s.bindFailed(ctx, pod, err)
		return
	}
	s.forgetPlan(k, false)
	s.queue.Forget(k)
	s.recorder.Event(pod, "Pod", v1.EventTypeNormal, "Scheduled",
		fmt.Sprintf("Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, pod.Spec.NodeName))
}

// bindFailed undoes the assumption of a pod whose binding (or volume
// plan) failed, and tries it again unless it is gone or bound.
func (s *Scheduler) bindFailed(ctx context.Context, pod *v1.Pod, err error) {
	k := key(pod)
	s.forgetPlan(k, true)
	gone := ctx.Err() != nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err)
	s.mu.Lock()
	if s.assumed[k] == pod {
		delete(s.assumed, k)
		// Gone or bound already: the watch tells where it counts (a
		// delete uncounts it, a binding recounts it), and until then
		// it counts where it was assumed, so that nothing is placed
		// in its room meanwhile. Refused: it counts nowhere.
		if s.counted[k] == pod && !gone {
			s.uncountLocked(k)
		}
	}
	s.mu.Unlock()
	if gone {
		return
	}
	klog.FromContext(ctx).V(2).Info("Binding failed", "pod", klog.KObj(pod), "node", pod.Spec.NodeName, "err", err)
	s.recorder.Event(pod, "Pod", v1.EventTypeWarning, "FailedScheduling", fmt.Sprintf("Binding rejected: %v", err))
	s.queue.AddRateLimited(k)
}

// unschedulableCondition writes PodScheduled=False/Unschedulable with the
// message, unless the pod says so already, and records the event.
func (s *Scheduler) unschedulableCondition(ctx context.Context, pod *v1.Pod, msg string) {
	s.recorder.Event(pod, "Pod", v1.EventTypeWarning, "FailedScheduling", msg)
	transition := metav1.Now()
	for _, c := range pod.Status.Conditions {
		if c.Type != v1.PodScheduled || c.Status != v1.ConditionFalse {
			continue
		}
		if c.Reason == v1.PodReasonUnschedulable && c.Message == msg {
			return
		}
		transition = c.LastTransitionTime // the status stays False
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
		"type": v1.PodScheduled, "status": v1.ConditionFalse, "reason": v1.PodReasonUnschedulable,
		"message": msg, "lastProbeTime": nil, "lastTransitionTime": transition,
	}}}})
	if err != nil {
		return
	}
	_, err = s.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		klog.FromContext(ctx).V(2).Info("Could not write the PodScheduled condition", "pod", klog.KObj(pod), "err", err)
	}
}
