// Package daemonset runs one pod of each DaemonSet on every eligible
// node: the job of kube-controller-manager's daemonset controller.
//
// A node is eligible when the template's nodeSelector and required node
// affinity match it and its taints are tolerated, with the tolerations
// upstream adds to every daemon pod (DaemonTolerations). Pods are placed
// through the scheduler, as upstream since 1.12: each is pinned to its
// node by a required node affinity on metadata.name (PinToNode). Nodes
// joining and leaving, and changes of their labels and taints, requeue
// every DaemonSet. The decision (Decide) is upstream's manage and
// rollingUpdate; this runner keeps the history in ControllerRevisions
// (controller-revision-hash on each pod), carries out the plan with
// counted expectations, and writes status.
package daemonset

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	appsdefaults "github.com/kite-project/kite/apis/apps/defaults"
	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

var kind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

const namespaceIndex = informer.NamespaceIndex

// templateGenerationLabel is upstream's DaemonSetTemplateGenerationKey
// (pkg/apis/apps, not in k8s.io/api): the template generation a daemon pod
// was made from.
const templateGenerationLabel = "pod-template-generation"

// writeTimeout bounds a write seen through after the controller was told
// to stop.
const writeTimeout = 30 * time.Second

// Options configure a Controller.
type Options struct {
	// Client watches DaemonSets, nodes, pods and ControllerRevisions and
	// writes pods, revisions and status. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// Workers sync DaemonSets in parallel; 0 means 2 (upstream's
	// --concurrent-daemonset-syncs).
	Workers int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Controller is the DaemonSet controller. Run drives it.
type Controller struct {
	client    kubernetes.Interface
	now       func() time.Time
	loop      *controller.Loop[string]
	queue     *workqueue.Queue[string]
	expect    *controller.Expectations
	recorder  *events.Recorder
	sets      *informer.Informer[*appsv1.DaemonSet]
	nodes     *informer.Informer[*corev1.Node]
	pods      *informer.Informer[*corev1.Pod]
	revisions *informer.Informer[*appsv1.ControllerRevision]
	// afterList, set by tests only, runs in sync between reading the
	// pods' cache and deciding: the window in which a watch event lands.
	afterList func(context.Context)
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("daemonset controller: Client is required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{client: opts.Client, now: opts.Now,
		queue: workqueue.New[string](workqueue.Options{}), expect: controller.NewExpectations(opts.Now),
		recorder: events.New(events.Options{Client: opts.Client, Component: "daemonset-controller"})}
	var err error
	c.sets, err = informer.For(opts.Informers, informer.Options[*appsv1.DaemonSet]{
		Name: "daemonsets", Shape: informer.Shape{Resource: "daemonsets.apps"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.AppsV1().DaemonSets(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*appsv1.DaemonSet]{namespaceIndex: informer.ByNamespace[*appsv1.DaemonSet]},
		Handlers: informer.Handlers[*appsv1.DaemonSet]{
			OnAdd:    func(ds *appsv1.DaemonSet) { c.queue.Add(key(ds)) },
			OnUpdate: func(_, ds *appsv1.DaemonSet) { c.queue.Add(key(ds)) },
			OnDelete: func(ds *appsv1.DaemonSet) { c.expect.Forget(key(ds)); c.queue.Add(key(ds)) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.nodes, err = informer.For(opts.Informers, informer.Options[*corev1.Node]{
		Name: "nodes", Shape: informer.Shape{Resource: "nodes"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Nodes(), nil),
		Handlers: informer.Handlers[*corev1.Node]{
			OnAdd: func(*corev1.Node) { c.queueAll() },
			OnUpdate: func(old, n *corev1.Node) {
				// Only what eligibility reads: labels, taints, name.
				if !labels.Equals(old.Labels, n.Labels) || !apiequality.Semantic.DeepEqual(old.Spec.Taints, n.Spec.Taints) {
					c.queueAll()
				}
			},
			OnDelete: func(*corev1.Node) { c.queueAll() },
		},
	})
	if err != nil {
		return nil, err
	}
	c.pods, err = informer.For(opts.Informers, informer.Options[*corev1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*corev1.Pod]{namespaceIndex: informer.ByNamespace[*corev1.Pod]},
		Handlers:      informer.Handlers[*corev1.Pod]{OnAdd: c.addPod, OnUpdate: c.updatePod, OnDelete: c.podDeleted},
	})
	if err != nil {
		return nil, err
	}
	c.revisions, err = informer.For(opts.Informers, informer.Options[*appsv1.ControllerRevision]{
		Name: "controllerrevisions", Shape: informer.Shape{Resource: "controllerrevisions.apps"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.AppsV1().ControllerRevisions(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*appsv1.ControllerRevision]{namespaceIndex: informer.ByNamespace[*appsv1.ControllerRevision]},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "daemonset-controller", Queue: c.queue,
		Informers: []controller.Informer{c.sets, c.nodes, c.pods, c.revisions},
		Recorder:  c.recorder, Workers: opts.Workers, Sync: c.sync}
	return c, nil
}

var key = controller.Key

// Run syncs DaemonSets until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and no DaemonSet is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *Controller) queueAll() {
	for _, ds := range c.sets.Store().List() {
		c.queue.Add(key(ds))
	}
}

func (c *Controller) owner(namespace string, ref *metav1.OwnerReference) *appsv1.DaemonSet {
	ds, _ := controller.Owner(c.sets.Store(), namespace, ref, kind)
	return ds
}

func (c *Controller) matching(p *corev1.Pod) []*appsv1.DaemonSet {
	sets, _ := c.sets.Store().ByIndex(namespaceIndex, p.Namespace)
	return controller.Selecting(sets, func(ds *appsv1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }, p.Labels)
}

func (c *Controller) addPod(p *corev1.Pod) {
	if ref := metav1.GetControllerOf(p); ref != nil {
		if ds := c.owner(p.Namespace, ref); ds != nil {
			c.expect.Created(key(ds), "")
			c.queue.Add(key(ds))
		}
		return
	}
	for _, ds := range c.matching(p) {
		c.queue.Add(key(ds))
	}
}

func (c *Controller) updatePod(old, p *corev1.Pod) {
	oldRef, ref := metav1.GetControllerOf(old), metav1.GetControllerOf(p)
	if oldRef != nil && (ref == nil || oldRef.UID != ref.UID) {
		if ds := c.owner(old.Namespace, oldRef); ds != nil {
			c.queue.Add(key(ds))
		}
	}
	if ref != nil {
		if ds := c.owner(p.Namespace, ref); ds != nil {
			if p.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
				c.expect.Deleted(key(ds), string(p.UID))
			}
			c.queue.Add(key(ds))
			if controller.Ready(p) != controller.Ready(old) && ds.Spec.MinReadySeconds > 0 {
				c.queue.AddAfter(key(ds), time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
			}
		}
		return
	}
	for _, ds := range c.matching(p) {
		c.queue.Add(key(ds))
	}
}

func (c *Controller) podDeleted(p *corev1.Pod) {
	if ds := c.owner(p.Namespace, metav1.GetControllerOf(p)); ds != nil {
		c.expect.Deleted(key(ds), string(p.UID))
		c.queue.Add(key(ds))
	}
}

func (c *Controller) sync(ctx context.Context, k string) error {
	ds, ok := c.sets.Store().Get(k)
	if !ok {
		c.expect.Forget(k)
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil // validation refuses such selectors
	}
	// Expectations are read before the cache, as upstream's syncDaemonSet
	// does: an informer stores an object before its handler lowers the
	// expectations, so satisfied expectations read first guarantee that
	// the list below holds what they waited for. Read after the list, a
	// pod created by the last sync whose event lands in between would be
	// missing from the list yet count as seen, and its node would get a
	// second pod.
	satisfied := c.expect.Satisfied(k)
	all, _ := c.pods.Store().ByIndex(namespaceIndex, ds.Namespace)
	if c.afterList != nil {
		c.afterList(ctx)
	}
	var candidates, terminating []*corev1.Pod
	for _, p := range all {
		switch {
		case p.DeletionTimestamp == nil:
			candidates = append(candidates, p)
		case p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
			if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == ds.UID {
				terminating = append(terminating, p)
			}
		}
	}
	pods, err := c.claimer(ds, sel).Claim(ctx, candidates)
	if err != nil {
		return err
	}
	revClient := c.client.AppsV1().ControllerRevisions(ds.Namespace)
	revs, _ := c.revisions.Store().ByIndex(namespaceIndex, ds.Namespace)
	owned := controller.OwnedRevisions(revs, ds.UID)
	update, collisions, err := controller.SyncRevision(ctx, revClient, ds.UID, owned, ptr.Deref(ds.Status.CollisionCount, 0),
		func(revision int64, collisions *int32) (*appsv1.ControllerRevision, error) {
			return NewRevision(ds, revision, collisions)
		})
	if err != nil {
		return err
	}
	hash := update.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	plan := Decide(Input{DaemonSet: ds, Nodes: c.nodes.Store().List(), Pods: pods, Terminating: terminating, Hash: hash, Now: c.now()})
	var actErr error
	if satisfied && ds.DeletionTimestamp == nil {
		actErr = c.act(ctx, ds, plan, hash)
	}
	plan.Status.CollisionCount = ptr.To(collisions)
	if err := c.writeStatus(ctx, ds, plan.Status); err != nil {
		return err
	}
	if actErr != nil {
		return actErr
	}
	live := map[string]bool{update.Name: true}
	for _, r := range owned {
		for _, p := range pods {
			if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] {
				live[r.Name] = true
			}
		}
	}
	if err := controller.TruncateHistory(ctx, revClient, controller.OwnedRevisions(revs, ds.UID), live, int(ptr.Deref(ds.Spec.RevisionHistoryLimit, 10))); err != nil {
		return err
	}
	if ds.Spec.MinReadySeconds > 0 && plan.Status.NumberReady != plan.Status.NumberAvailable {
		c.queue.AddAfter(k, time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}

func (c *Controller) claimer(ds *appsv1.DaemonSet, sel labels.Selector) *controller.Claimer[*corev1.Pod] {
	return &controller.Claimer[*corev1.Pod]{Owner: ds, Kind: kind, Selector: sel, Client: c.client.CoreV1().Pods(ds.Namespace),
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		}}
}

// NewRevision is the DaemonSet's revision: its template (TemplatePatch),
// named <ds>-<hash>, labelled with the template's labels and the hash.
func NewRevision(ds *appsv1.DaemonSet, revision int64, collisions *int32) (*appsv1.ControllerRevision, error) {
	patch, err := controller.TemplatePatch(ds)
	if err != nil {
		return nil, fmt.Errorf("daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	hash := controller.HashRevision(patch, collisions)
	lbls := make(map[string]string, len(ds.Spec.Template.Labels)+1)
	for k, v := range ds.Spec.Template.Labels {
		lbls[k] = v
	}
	lbls[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: controller.RevisionName(ds.Name, hash), Namespace: ds.Namespace, Labels: lbls,
			Annotations: ds.Annotations, OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, kind)}},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: revision,
	}, nil
}

// NewPod is upstream's daemon pod: the template with the revision hash and
// template generation labels, the daemon tolerations, pinned to node,
// named <ds>-<random>, the DaemonSet as controller.
func NewPod(ds *appsv1.DaemonSet, node, hash string) *corev1.Pod {
	t := ds.Spec.Template.DeepCopy()
	lbls := make(map[string]string, len(t.Labels)+2)
	for k, v := range t.Labels {
		lbls[k] = v
	}
	lbls[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	lbls[templateGenerationLabel] = strconv.FormatInt(appsdefaults.DaemonSetTemplateGeneration(ds), 10)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: ds.Name + "-", Namespace: ds.Namespace, Labels: lbls, Annotations: t.Annotations,
			Finalizers: t.Finalizers, OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, kind)}},
		Spec: t.Spec,
	}
	p.Spec.Tolerations = DaemonTolerations(&p.Spec)
	PinToNode(&p.Spec, node)
	return p
}

// act makes and deletes the plan's pods, expectations first.
func (c *Controller) act(ctx context.Context, ds *appsv1.DaemonSet, plan Plan, hash string) error {
	if len(plan.Create)+len(plan.Delete) == 0 {
		return nil
	}
	k := key(ds)
	dels := make([]string, len(plan.Delete))
	for i, p := range plan.Delete {
		dels[i] = string(p.UID)
	}
	c.expect.Expect(k, len(plan.Create), nil, dels)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	var first error
	for _, p := range plan.Delete {
		err := c.client.CoreV1().Pods(p.Namespace).Delete(wctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		switch {
		case err == nil:
			c.recorder.Event(ds, "DaemonSet", corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: "+p.Name)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			c.expect.Deleted(k, string(p.UID))
		default:
			c.expect.Deleted(k, string(p.UID))
			c.recorder.Event(ds, "DaemonSet", corev1.EventTypeWarning, "FailedDelete", fmt.Sprintf("Error deleting: %v", err))
			first = cmpErr(first, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	nodes := make(chan string, len(plan.Create)) // SlowStart calls in parallel
	for _, n := range plan.Create {
		nodes <- n
	}
	done, err := controller.SlowStart(len(plan.Create), func() error {
		node := <-nodes
		if ctx.Err() != nil {
			return ctx.Err()
		}
		created, err := c.client.CoreV1().Pods(ds.Namespace).Create(wctx, NewPod(ds, node, hash), metav1.CreateOptions{})
		if err != nil {
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			c.recorder.Event(ds, "DaemonSet", corev1.EventTypeWarning, "FailedCreate", fmt.Sprintf("Error creating: %v", err))
			return fmt.Errorf("pod of %s on %s: %w", k, node, err)
		}
		c.recorder.Event(ds, "DaemonSet", corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: "+created.Name)
		return nil
	})
	for range len(plan.Create) - done {
		c.expect.Created(k, "") // never coming
	}
	return cmpErr(first, err)
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func (c *Controller) writeStatus(ctx context.Context, ds *appsv1.DaemonSet, s appsv1.DaemonSetStatus) error {
	s.Conditions = ds.Status.Conditions
	if apiequality.Semantic.DeepEqual(ds.Status, s) {
		return nil
	}
	cp := ds.DeepCopy()
	cp.Status = s
	_, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
