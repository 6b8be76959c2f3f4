// Package resourcequota keeps every ResourceQuota's status as
// kube-controller-manager's resourcequota controller does: status.hard
// is spec.hard and status.used what the namespace's objects use of it
// (decide.go, over the same evaluators as quota admission,
// apis/core/quota). A quota is recomputed when its spec changes, when an
// object it counts is deleted or changes what it uses, and every
// ResyncPeriod. The ResourceQuota admission plugin charges creates as
// they come; this controller gives back what deleted objects used.
package resourcequota

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// Options configure a Controller.
type Options struct {
	// Client reads quotas, pods, services and claims, and writes quota
	// status. Required.
	Client kubernetes.Interface
	// Metadata lists and watches the other resources quotas count.
	// Required.
	Metadata metadata.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// ResyncPeriod recomputes every quota this often; 0 means upstream's
	// --resource-quota-sync-period default, 5 minutes.
	ResyncPeriod time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Controller computes quota status. Run drives it.
type Controller struct {
	client kubernetes.Interface
	meta   metadata.Interface
	now    func() time.Time
	resync time.Duration
	loop   *controller.Loop[string]
	queue  *workqueue.Queue[string]
	quotas *informer.Informer[*corev1.ResourceQuota]
	pods   *informer.Informer[*corev1.Pod]

	mu sync.Mutex
	// runCtx is Run's, for the monitors started while running.
	runCtx context.Context
	// monitored are the resources watched for deletions, with their
	// versions.
	monitored map[schema.GroupResource]bool
	wg        sync.WaitGroup
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil || opts.Metadata == nil {
		return nil, fmt.Errorf("resourcequota controller: Client and Metadata are required")
	}
	c := &Controller{client: opts.Client, meta: opts.Metadata, now: opts.Now, resync: opts.ResyncPeriod,
		queue: workqueue.New[string](workqueue.Options{}), monitored: map[schema.GroupResource]bool{}}
	if c.now == nil {
		c.now = time.Now
	}
	if c.resync == 0 {
		c.resync = 5 * time.Minute
	}
	var err error
	c.quotas, err = informer.For(opts.Informers, informer.Options[*corev1.ResourceQuota]{
		Name: "resourcequotas", Shape: informer.Shape{Resource: "resourcequotas"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().ResourceQuotas(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*corev1.ResourceQuota]{informer.NamespaceIndex: informer.ByNamespace[*corev1.ResourceQuota]},
		Handlers: informer.Handlers[*corev1.ResourceQuota]{
			OnAdd: func(q *corev1.ResourceQuota) { c.queue.Add(key(q)) },
			// Status changes are this controller's and admission's: only
			// a new spec, or a status that lacks it, is a reason to
			// recompute (upstream's updateQuota).
			OnUpdate: func(old, q *corev1.ResourceQuota) {
				if NeedsSync(q) || !equalHard(old, q) {
					c.queue.Add(key(q))
				}
			},
		},
	})
	if err != nil {
		return nil, err
	}
	c.pods, err = informer.For(opts.Informers, informer.Options[*corev1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*corev1.Pod]{informer.NamespaceIndex: informer.ByNamespace[*corev1.Pod]},
		Handlers: informer.Handlers[*corev1.Pod]{
			OnUpdate: func(old, pod *corev1.Pod) {
				if PodChanged(old, pod, c.now()) {
					c.replenish(corev1.Resource("pods"), pod.Namespace)
				}
			},
			OnDelete: func(pod *corev1.Pod) { c.replenish(corev1.Resource("pods"), pod.Namespace) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{
		Name: "resourcequota-controller", Queue: c.queue,
		Informers:  []controller.Informer{c.quotas, c.pods},
		Started:    func(ctx context.Context) { c.mu.Lock(); c.runCtx = ctx; c.mu.Unlock() },
		Background: []func(ctx context.Context){c.resyncAll},
		Sync:       c.sync,
	}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.loop.Run(ctx)
	c.wg.Wait()
}

// WaitIdle returns once the caches are listed and no quota is queued or
// being worked on.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func key(q *corev1.ResourceQuota) string { return q.Namespace + "/" + q.Name }

func equalHard(a, b *corev1.ResourceQuota) bool {
	if len(a.Spec.Hard) != len(b.Spec.Hard) {
		return false
	}
	for k, v := range a.Spec.Hard {
		if w, ok := b.Spec.Hard[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// replenish queues the quotas of namespace that count gr.
func (c *Controller) replenish(gr schema.GroupResource, namespace string) {
	quotas, err := c.quotas.Store().ByIndex(informer.NamespaceIndex, namespace)
	if err != nil {
		return
	}
	for _, q := range quotas {
		if slices.Contains(Resources(q.Spec.Hard), gr) {
			c.queue.Add(key(q))
		}
	}
}

// resyncAll queues every quota each resync period.
func (c *Controller) resyncAll(ctx context.Context) {
	t := time.NewTicker(c.resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, q := range c.quotas.Store().List() {
				c.queue.Add(key(q))
			}
		}
	}
}

// sync recomputes one quota's status and writes it when it changed. A
// conflict (admission charged the quota meanwhile) retries with the
// newer quota.
func (c *Controller) sync(ctx context.Context, k string) error {
	q, ok := c.quotas.Store().Get(k)
	if !ok {
		return nil
	}
	objects := map[schema.GroupResource][]runtime.Object{}
	for _, gr := range Resources(q.Spec.Hard) {
		objs, err := c.list(ctx, gr, q.Namespace)
		if err != nil {
			return fmt.Errorf("quota %s: list %s: %w", k, gr, err)
		}
		objects[gr] = objs
	}
	status, dirty, err := Status(q, objects, c.now())
	if err != nil || !dirty {
		return err
	}
	updated := q.DeepCopy()
	updated.Status = status
	_, err = c.client.CoreV1().ResourceQuotas(q.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of quota %s: %w", k, err)
	}
	return nil
}

// list returns the objects of gr in namespace: pods from the cache,
// services and claims whole, anything else as metadata (it is only
// counted), watching gr for deletions from then on.
func (c *Controller) list(ctx context.Context, gr schema.GroupResource, namespace string) ([]runtime.Object, error) {
	var out []runtime.Object
	switch gr {
	case corev1.Resource("pods"):
		pods, err := c.pods.Store().ByIndex(informer.NamespaceIndex, namespace)
		if err != nil {
			return nil, err
		}
		for _, p := range pods {
			out = append(out, p)
		}
		return out, nil
	}
	gvr, served, err := c.monitor(ctx, gr)
	if err != nil || !served {
		// Nothing of a resource not served (yet) is counted.
		return nil, err
	}
	switch gr {
	case corev1.Resource("services"):
		list, err := c.client.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	case corev1.Resource("persistentvolumeclaims"):
		list, err := c.client.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	default:
		list, err := c.meta.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// monitor resolves gr to its served version and, the first time, starts
// watching it: a deletion (or, for services and claims, an update) in a
// namespace queues that namespace's quotas that count gr.
func (c *Controller) monitor(ctx context.Context, gr schema.GroupResource) (gvr schema.GroupVersionResource, served bool, err error) {
	gvr, served, err = c.resolve(gr)
	if err != nil || !served {
		return gvr, served, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.monitored[gr] || c.runCtx == nil {
		return gvr, true, nil
	}
	c.monitored[gr] = true
	replenish := func(m *metav1.PartialObjectMetadata) { c.replenish(gr, m.Namespace) }
	h := informer.Handlers[*metav1.PartialObjectMetadata]{OnDelete: replenish}
	if gr == corev1.Resource("services") || gr == corev1.Resource("persistentvolumeclaims") {
		h.OnUpdate = func(_, m *metav1.PartialObjectMetadata) { replenish(m) }
	}
	inf, err := informer.New(informer.Options[*metav1.PartialObjectMetadata]{
		Name:          "resourcequota " + gvr.String(),
		ListerWatcher: listwatch.FromTypedClient(c.meta.Resource(gvr).Namespace(""), nil),
		Handlers:      h,
	})
	if err != nil {
		return gvr, true, err
	}
	runCtx := c.runCtx
	c.wg.Go(func() { inf.Run(runCtx) })
	klog.FromContext(ctx).V(2).Info("Monitoring for quota", "resource", gvr)
	return gvr, true, nil
}

// resolve finds the version gr is served at: v1 for the core group, the
// group's preferred version otherwise.
func (c *Controller) resolve(gr schema.GroupResource) (schema.GroupVersionResource, bool, error) {
	if gr.Group == "" {
		return gr.WithVersion("v1"), true, nil
	}
	groups, err := c.client.Discovery().ServerGroups()
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("discovery: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name == gr.Group {
			return gr.WithVersion(g.PreferredVersion.Version), true, nil
		}
	}
	return schema.GroupVersionResource{}, false, nil
}
