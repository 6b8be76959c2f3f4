// Package disruption keeps each PodDisruptionBudget's status: the job of
// kube-controller-manager's disruption controller.
//
// For every budget it counts the pods its selector matches: expectedPods
// (the pods, or, for a percentage or maxUnavailable, the replicas of their
// controllers, through the controllers' scale), desiredHealthy,
// currentHealthy (ready pods not being deleted nor pending in
// disruptedPods), disruptionsAllowed, the disruptedPods the eviction
// subresource recorded and that have not yet gone, and the
// DisruptionAllowed condition (SufficientPods, InsufficientPods,
// SyncFailed). A budget it cannot compute allows no disruption. It also
// resets the DisruptionTarget condition of pods an eviction marked and
// that were not deleted within two minutes.
package disruption

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/scaleclient"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

const namespaceIndex = informer.NamespaceIndex

// Options configure a Controller.
type Options struct {
	// Client watches budgets, pods, ReplicaSets and Deployments and
	// writes budgets' and pods' status. Required.
	Client kubernetes.Interface
	// Scales reads the scale of pods' other controllers (StatefulSets,
	// ReplicationControllers, custom resources). nil: a budget counting
	// replicas of such pods fails safe (no disruption allowed).
	Scales *scaleclient.Client
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// item is a key of the queue: a budget, or a pod whose DisruptionTarget
// condition may be stale.
type item struct {
	pod bool
	key string
}

// Controller is the disruption controller. Run drives it.
type Controller struct {
	client      kubernetes.Interface
	scales      *scaleclient.Client
	now         func() time.Time
	loop        *controller.Loop[item]
	queue       *workqueue.Queue[item]
	budgets     *informer.Informer[*policyv1.PodDisruptionBudget]
	pods        *informer.Informer[*corev1.Pod]
	sets        *informer.Informer[*appsv1.ReplicaSet]
	deployments *informer.Informer[*appsv1.Deployment]
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("disruption controller: Client is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{client: opts.Client, scales: opts.Scales, now: opts.Now, queue: workqueue.New[item](workqueue.Options{})}
	queueBudget := func(b *policyv1.PodDisruptionBudget) { c.queue.Add(item{key: controller.Key(b)}) }
	var err error
	c.budgets, err = informer.For(opts.Informers, informer.Options[*policyv1.PodDisruptionBudget]{
		Name: "poddisruptionbudgets", Shape: informer.Shape{Resource: "poddisruptionbudgets.policy"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.PolicyV1().PodDisruptionBudgets(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*policyv1.PodDisruptionBudget]{namespaceIndex: informer.ByNamespace[*policyv1.PodDisruptionBudget]},
		Handlers: informer.Handlers[*policyv1.PodDisruptionBudget]{
			OnAdd: queueBudget, OnUpdate: func(_, b *policyv1.PodDisruptionBudget) { queueBudget(b) }, OnDelete: queueBudget,
		},
	})
	if err != nil {
		return nil, err
	}
	c.pods, err = informer.For(opts.Informers, informer.Options[*corev1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*corev1.Pod]{namespaceIndex: informer.ByNamespace[*corev1.Pod]},
		Handlers: informer.Handlers[*corev1.Pod]{
			OnAdd: func(p *corev1.Pod) { c.podChanged(nil, p) }, OnUpdate: c.podChanged,
			OnDelete: func(p *corev1.Pod) { c.podChanged(nil, p) },
		},
	})
	if err != nil {
		return nil, err
	}
	// A controller's scale changing changes a percentage budget: upstream
	// hears of it through the pods only, and so does this controller.
	c.sets, err = informer.For(opts.Informers, informer.Options[*appsv1.ReplicaSet]{
		Name: "replicasets", Shape: informer.Shape{Resource: "replicasets.apps"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.AppsV1().ReplicaSets(""), nil),
	})
	if err != nil {
		return nil, err
	}
	c.deployments, err = informer.For(opts.Informers, informer.Options[*appsv1.Deployment]{
		Name: "deployments", Shape: informer.Shape{Resource: "deployments.apps"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.AppsV1().Deployments(""), nil),
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[item]{Name: "disruption-controller", Queue: c.queue,
		Informers: []controller.Informer{c.budgets, c.pods, c.sets, c.deployments}, Sync: c.sync}
	return c, nil
}

// Run syncs budgets until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and nothing is queued but
// rechecks on timers.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// podChanged queues the budgets matching the pod before and after, and
// the pod itself when its DisruptionTarget condition will go stale.
func (c *Controller) podChanged(old, p *corev1.Pod) {
	for _, b := range c.budgetsOf(p) {
		c.queue.Add(item{key: controller.Key(b)})
	}
	if old != nil && !labels.Equals(old.Labels, p.Labels) {
		for _, b := range c.budgetsOf(old) {
			c.queue.Add(item{key: controller.Key(b)})
		}
	}
	if stale, after := StaleDisruptionTarget(p, c.now()); stale {
		c.queue.AddAfter(item{pod: true, key: controller.Key(p)}, after)
	}
}

// budgetsOf returns the budgets of the pod's namespace that select it.
func (c *Controller) budgetsOf(p *corev1.Pod) []*policyv1.PodDisruptionBudget {
	all, _ := c.budgets.Store().ByIndex(namespaceIndex, p.Namespace)
	var out []*policyv1.PodDisruptionBudget
	for _, b := range all {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err == nil && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, b)
		}
	}
	return out
}

func (c *Controller) sync(ctx context.Context, it item) error {
	if it.pod {
		return c.syncPod(ctx, it.key)
	}
	b, ok := c.budgets.Store().Get(it.key)
	if !ok {
		return nil
	}
	err := c.syncBudget(ctx, b)
	switch {
	case err == nil || apierrors.IsConflict(err):
		// A conflict retries with the newer budget, without failing safe.
		return err
	}
	klog.FromContext(ctx).Error(err, "Failed to sync PDB", "podDisruptionBudget", klog.KObj(b))
	_, werr := c.client.PolicyV1().PodDisruptionBudgets(b.Namespace).UpdateStatus(ctx, FailSafe(b, err), metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
	return werr
}

// syncBudget writes the status the budget's pods give it.
func (c *Controller) syncBudget(ctx context.Context, b *policyv1.PodDisruptionBudget) error {
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
	if err != nil {
		return fmt.Errorf("selector of %s/%s: %w", b.Namespace, b.Name, err)
	}
	all, _ := c.pods.Store().ByIndex(namespaceIndex, b.Namespace)
	var pods []*corev1.Pod
	for _, p := range all {
		if sel.Matches(labels.Set(p.Labels)) {
			pods = append(pods, p)
		}
	}
	expected, desired, unmanaged, err := ExpectedCount(b, pods, c.finder(ctx))
	if err != nil {
		return err
	}
	if len(unmanaged) > 0 {
		klog.FromContext(ctx).V(4).Info("Found unmanaged pods associated with this PDB", "podDisruptionBudget", klog.KObj(b), "pods", unmanaged)
	}
	now := c.now()
	disrupted, recheck := DisruptedPods(b, pods, now)
	healthy := CurrentHealthy(pods, disrupted, now)
	if want := Status(b, healthy, desired, expected, disrupted); want != nil {
		if _, err := c.client.PolicyV1().PodDisruptionBudgets(b.Namespace).UpdateStatus(ctx, want, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
			return fmt.Errorf("status of %s/%s: %w", b.Namespace, b.Name, err)
		}
	}
	if recheck != nil {
		c.queue.AddAfter(item{key: controller.Key(b)}, recheck.Sub(now))
	}
	return nil
}

// finder resolves a pod's controller to its scale (upstream's finders):
// a ReplicaSet of a Deployment counts as the Deployment, any other
// ReplicaSet as itself, from the caches; anything else through its scale
// subresource.
func (c *Controller) finder(ctx context.Context) ScaleFinder {
	return func(namespace string, ref *metav1.OwnerReference) (*Scale, error) {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("controller of a pod of %s: %w", namespace, err)
		}
		if ref.Kind == "ReplicaSet" && (gv.Group == "apps" || gv.Group == "extensions") {
			rs, ok := c.sets.Store().Get(namespace + "/" + ref.Name)
			if !ok || rs.UID != ref.UID {
				return nil, nil
			}
			if dref := metav1.GetControllerOf(rs); dref != nil && dref.Kind == "Deployment" {
				if d, ok := c.deployments.Store().Get(namespace + "/" + dref.Name); ok && d.UID == dref.UID {
					return &Scale{UID: d.UID, Replicas: replicas(d.Spec.Replicas)}, nil
				}
			}
			return &Scale{UID: rs.UID, Replicas: replicas(rs.Spec.Replicas)}, nil
		}
		if c.scales == nil {
			return nil, fmt.Errorf("no scale client to find the scale of %s %s/%s", ref.Kind, namespace, ref.Name)
		}
		s, _, err := c.scales.Get(ctx, namespace, ref.APIVersion, ref.Kind, ref.Name)
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, err
		case s.UID != ref.UID:
			return nil, nil
		}
		return &Scale{UID: s.UID, Replicas: s.Spec.Replicas}, nil
	}
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// syncPod resets a stale DisruptionTarget condition to False.
func (c *Controller) syncPod(ctx context.Context, key string) error {
	p, ok := c.pods.Store().Get(key)
	if !ok {
		return nil
	}
	stale, after := StaleDisruptionTarget(p, c.now())
	if !stale {
		return nil
	}
	if after > 0 {
		c.queue.AddAfter(item{pod: true, key: key}, after)
		return nil
	}
	p = p.DeepCopy()
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
			p.Status.Conditions[i].LastTransitionTime = metav1.NewTime(c.now())
		}
	}
	if _, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reset the DisruptionTarget condition of pod %s: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Reset stale DisruptionTarget condition to False", "pod", klog.KObj(p))
	return nil
}
