// Package replicaset keeps each ReplicaSet's number of pods: the job of
// kube-controller-manager's replicaset controller.
//
// It creates missing pods from the template in slow-start batches and
// deletes extra ones in upstream's order (PodsToDelete), adopts orphan
// pods its selector matches and releases owned pods it no longer matches,
// and writes status (replicas, fullyLabeledReplicas, readyReplicas,
// availableReplicas after minReadySeconds, terminatingReplicas,
// observedGeneration and the ReplicaFailure condition). Expectations hold a ReplicaSet back until
// the watch shows its own creations and deletions.
package replicaset

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// burstReplicas caps the pods created or deleted in one sync (upstream's
// --replicaset-burst... default 500).
const burstReplicas = 500

const namespaceIndex = informer.NamespaceIndex

// Kind says which objects a Controller keeps. ReplicaSets are the
// default; ReplicationControllers are kept by the same logic, seen as
// ReplicaSets (upstream's replication manager is the ReplicaSet
// controller over converted objects, and so is controllers/replication).
type Kind struct {
	// Name names the controller in logs and its events' component.
	Name string
	// GVK is the owners' kind, which pods' controller references name.
	GVK schema.GroupVersionKind
	// Shape and ListerWatcher list and watch the owners as
	// *appsv1.ReplicaSet objects.
	Shape         informer.Shape
	ListerWatcher listwatch.ListerWatcher
	// Get reads an owner afresh, before a first adoption.
	Get func(ctx context.Context, namespace, name string) (metav1.Object, error)
	// UpdateStatus writes an owner's status.
	UpdateStatus func(ctx context.Context, rs *appsv1.ReplicaSet) error
}

// replicaSets is the Kind of apps/v1 ReplicaSets.
func replicaSets(client kubernetes.Interface) Kind {
	return Kind{
		Name: "replicaset-controller", GVK: appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		Shape:         informer.Shape{Resource: "replicasets.apps"},
		ListerWatcher: listwatch.FromTypedClient(client.AppsV1().ReplicaSets(""), nil),
		Get: func(ctx context.Context, namespace, name string) (metav1.Object, error) {
			return client.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
		},
		UpdateStatus: func(ctx context.Context, rs *appsv1.ReplicaSet) error {
			_, err := client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
			return err
		},
	}
}

// writeTimeout bounds a pod create or delete seen through after the
// controller was told to stop.
const writeTimeout = 30 * time.Second

// Options configure a Controller.
type Options struct {
	// Client watches ReplicaSets and pods and writes them. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// Workers sync ReplicaSets in parallel; 0 means 5 (upstream's
	// --concurrent-replicaset-syncs).
	Workers int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Controller is the ReplicaSet controller. Run drives it.
type Controller struct {
	client   kubernetes.Interface
	kind     Kind
	now      func() time.Time
	loop     *controller.Loop[string]
	queue    *workqueue.Queue[string]
	expect   *controller.Expectations
	recorder *events.Recorder
	sets     *informer.Informer[*appsv1.ReplicaSet]
	pods     *informer.Informer[*corev1.Pod]
}

// New returns a Controller of ReplicaSets.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("replicaset controller: Client is required")
	}
	return NewFor(opts, replicaSets(opts.Client))
}

// NewFor returns a Controller of the objects of kind.
func NewFor(opts Options, kind Kind) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("%s: Client is required", kind.Name)
	}
	if opts.Workers <= 0 {
		opts.Workers = 5
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{client: opts.Client, kind: kind, now: opts.Now,
		queue: workqueue.New[string](workqueue.Options{}), expect: controller.NewExpectations(opts.Now),
		recorder: events.New(events.Options{Client: opts.Client, Component: kind.Name})}
	var err error
	c.sets, err = informer.For(opts.Informers, informer.Options[*appsv1.ReplicaSet]{
		Name: kind.Shape.Resource, Shape: kind.Shape,
		ListerWatcher: kind.ListerWatcher,
		Indexers:      map[string]listwatch.IndexFunc[*appsv1.ReplicaSet]{namespaceIndex: informer.ByNamespace[*appsv1.ReplicaSet]},
		Handlers: informer.Handlers[*appsv1.ReplicaSet]{
			OnAdd:    func(rs *appsv1.ReplicaSet) { c.queue.Add(key(rs)) },
			OnUpdate: func(_, rs *appsv1.ReplicaSet) { c.queue.Add(key(rs)) },
			OnDelete: func(rs *appsv1.ReplicaSet) { c.expect.Forget(key(rs)); c.queue.Add(key(rs)) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.pods, err = informer.For(opts.Informers, informer.Options[*corev1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*corev1.Pod]{namespaceIndex: informer.ByNamespace[*corev1.Pod]},
		Handlers:      informer.Handlers[*corev1.Pod]{OnAdd: c.addPod, OnUpdate: c.updatePod, OnDelete: c.deletePod},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: kind.Name, Queue: c.queue, Informers: []controller.Informer{c.sets, c.pods},
		Recorder: c.recorder, Workers: opts.Workers, Sync: c.sync}
	return c, nil
}

var key = controller.Key

// Run syncs ReplicaSets until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and no ReplicaSet is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// owner returns the ReplicaSet a controller reference names, if cached
// with that uid.
func (c *Controller) owner(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	rs, _ := controller.Owner(c.sets.Store(), namespace, ref, c.kind.GVK)
	return rs
}

// matching returns the ReplicaSets whose selector matches an orphan pod.
func (c *Controller) matching(p *corev1.Pod) []*appsv1.ReplicaSet {
	sets, _ := c.sets.Store().ByIndex(namespaceIndex, p.Namespace)
	return controller.Selecting(sets, func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }, p.Labels)
}

func (c *Controller) addPod(p *corev1.Pod) {
	if p.DeletionTimestamp != nil {
		c.deletePod(p)
		return
	}
	if ref := metav1.GetControllerOf(p); ref != nil {
		if rs := c.owner(p.Namespace, ref); rs != nil {
			c.expect.Created(key(rs), "")
			c.queue.Add(key(rs))
		}
		return
	}
	for _, rs := range c.matching(p) {
		c.queue.Add(key(rs))
	}
}

func (c *Controller) updatePod(old, p *corev1.Pod) {
	if p.DeletionTimestamp != nil && old.DeletionTimestamp == nil {
		// A graceful delete: the pod is as good as gone for counting.
		c.deletePod(p)
	}
	oldRef, ref := metav1.GetControllerOf(old), metav1.GetControllerOf(p)
	if oldRef != nil && (ref == nil || oldRef.UID != ref.UID) {
		if rs := c.owner(old.Namespace, oldRef); rs != nil {
			c.queue.Add(key(rs))
		}
	}
	if ref != nil {
		if rs := c.owner(p.Namespace, ref); rs != nil {
			c.queue.Add(key(rs))
			if controller.Ready(p) != controller.Ready(old) && rs.Spec.MinReadySeconds > 0 {
				c.queue.AddAfter(key(rs), time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
			}
		}
		return
	}
	if !labels.Equals(old.Labels, p.Labels) || oldRef != nil {
		for _, rs := range c.matching(p) {
			c.queue.Add(key(rs))
		}
	}
}

func (c *Controller) deletePod(p *corev1.Pod) {
	if rs := c.owner(p.Namespace, metav1.GetControllerOf(p)); rs != nil {
		c.expect.Deleted(key(rs), key(p))
		c.queue.Add(key(rs))
	}
}

func (c *Controller) sync(ctx context.Context, k string) error {
	rs, ok := c.sets.Store().Get(k)
	if !ok {
		c.expect.Forget(k)
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		return nil // validation refuses such selectors: nothing to do
	}
	needsSync := c.expect.Satisfied(k)
	all, _ := c.pods.Store().ByIndex(namespaceIndex, rs.Namespace)
	pods, err := c.claimer(rs, sel).Claim(ctx, slices.DeleteFunc(slices.Clone(all), func(p *corev1.Pod) bool { return !controller.Active(p) }))
	if err != nil {
		return err
	}
	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = c.manage(ctx, rs, pods, all)
	}
	status := c.status(rs, pods, manageErr)
	status.TerminatingReplicas = ptr.To(TerminatingReplicas(rs, sel, all))
	if err := c.writeStatus(ctx, rs, status); err != nil {
		return err
	}
	if manageErr != nil {
		return manageErr
	}
	if rs.Spec.MinReadySeconds > 0 && status.ReadyReplicas != status.AvailableReplicas {
		c.queue.AddAfter(k, time.Duration(rs.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}

// claimer adopts orphan pods rs's selector matches and releases owned
// pods it no longer matches (upstream's PodControllerRefManager).
func (c *Controller) claimer(rs *appsv1.ReplicaSet, sel labels.Selector) *controller.Claimer[*corev1.Pod] {
	return &controller.Claimer[*corev1.Pod]{Owner: rs, Kind: c.kind.GVK, Selector: sel, Client: c.client.CoreV1().Pods(rs.Namespace),
		Fresh: func(ctx context.Context) (metav1.Object, error) {
			return c.kind.Get(ctx, rs.Namespace, rs.Name)
		}}
}

func (c *Controller) controllerRef(rs *appsv1.ReplicaSet) *metav1.OwnerReference {
	return metav1.NewControllerRef(rs, c.kind.GVK)
}

// manage creates or deletes pods towards spec.replicas.
func (c *Controller) manage(ctx context.Context, rs *appsv1.ReplicaSet, pods, all []*corev1.Pod) error {
	k := key(rs)
	want := 1
	if rs.Spec.Replicas != nil {
		want = int(*rs.Spec.Replicas)
	}
	diff := len(pods) - want
	switch {
	case diff < 0:
		n := min(-diff, burstReplicas)
		c.expect.Expect(k, n, nil, nil)
		done, err := controller.SlowStart(n, func() error { return c.createPod(ctx, rs) })
		for range n - done {
			c.expect.Created(k, "") // never coming
		}
		return err
	case diff > 0:
		n := min(diff, burstReplicas)
		victims := controller.PodsToDelete(pods, c.related(rs, all), n, c.now())
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = key(p)
		}
		c.expect.Expect(k, 0, nil, keys)
		errs := make(chan error, len(victims))
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		defer cancel()
		for _, p := range victims {
			go func() {
				err := c.client.CoreV1().Pods(p.Namespace).Delete(dctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
				switch {
				case err == nil:
					c.recorder.Event(rs, c.kind.GVK.Kind, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: "+p.Name)
				case apierrors.IsNotFound(err):
					c.expect.Deleted(k, key(p))
					err = nil
				default:
					c.expect.Deleted(k, key(p))
					c.recorder.Event(rs, c.kind.GVK.Kind, corev1.EventTypeWarning, "FailedDelete", fmt.Sprintf("Error deleting: %v", err))
				}
				errs <- err
			}()
		}
		var first error
		for range victims {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	return nil
}

// related are the active pods of ReplicaSets with the same controller as
// rs (a Deployment's), which count for "doubled up" on a node.
func (c *Controller) related(rs *appsv1.ReplicaSet, all []*corev1.Pod) []*corev1.Pod {
	ref := metav1.GetControllerOf(rs)
	if ref == nil {
		return nil
	}
	siblings := map[types.UID]bool{}
	sets, _ := c.sets.Store().ByIndex(namespaceIndex, rs.Namespace)
	for _, s := range sets {
		if r := metav1.GetControllerOf(s); r != nil && r.UID == ref.UID {
			siblings[s.UID] = true
		}
	}
	var out []*corev1.Pod
	for _, p := range all {
		if r := metav1.GetControllerOf(p); r != nil && siblings[r.UID] && controller.Active(p) {
			out = append(out, p)
		}
	}
	return out
}

// createPod makes one pod from the template, as upstream's
// GetPodFromTemplate: the template's labels, annotations and finalizers,
// generateName "<rs>-", and rs as controller.
func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	if err := ctx.Err(); err != nil {
		return err // stopping: start no more
	}
	// A create once sent is seen through even if the controller stops
	// meanwhile: cancelling it could leave the server making the pod after
	// a successor has listed, and the successor would make one too many.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	t := rs.Spec.Template.DeepCopy()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: rs.Name + "-", Namespace: rs.Namespace,
			Labels: t.Labels, Annotations: t.Annotations, Finalizers: t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*c.controllerRef(rs)},
		},
		Spec: t.Spec,
	}
	created, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil // upstream does not retry into a terminating namespace
		}
		c.recorder.Event(rs, c.kind.GVK.Kind, corev1.EventTypeWarning, "FailedCreate", fmt.Sprintf("Error creating: %v", err))
		return err
	}
	c.recorder.Event(rs, c.kind.GVK.Kind, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: "+created.Name)
	return nil
}

// status is upstream's calculateStatus.
func (c *Controller) status(rs *appsv1.ReplicaSet, pods []*corev1.Pod, manageErr error) appsv1.ReplicaSetStatus {
	s := *rs.Status.DeepCopy()
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fully, ready, available int32
	now := c.now()
	for _, p := range pods {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fully++
		}
		if controller.Ready(p) {
			ready++
			if controller.Available(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	i := slices.IndexFunc(s.Conditions, func(c appsv1.ReplicaSetCondition) bool { return c.Type == appsv1.ReplicaSetReplicaFailure })
	switch {
	case manageErr != nil && i < 0:
		reason := "FailedCreate"
		if rs.Spec.Replicas != nil && len(pods) > int(*rs.Spec.Replicas) {
			reason = "FailedDelete"
		}
		s.Conditions = append(s.Conditions, appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error()})
	case manageErr == nil && i >= 0:
		s.Conditions = slices.Delete(s.Conditions, i, i+1)
	}
	s.Replicas = int32(len(pods))
	s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas = fully, ready, available
	return s
}

func (c *Controller) writeStatus(ctx context.Context, rs *appsv1.ReplicaSet, s appsv1.ReplicaSetStatus) error {
	s.ObservedGeneration = rs.Generation
	if apiequality.Semantic.DeepEqual(rs.Status, s) {
		return nil
	}
	cp := rs.DeepCopy()
	cp.Status = s
	err := c.kind.UpdateStatus(ctx, cp)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // the newer object is queued by its own event
	}
	return err
}
