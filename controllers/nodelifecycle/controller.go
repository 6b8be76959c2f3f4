// Package nodelifecycle watches nodes' heartbeats: kube-controller-manager's
// node lifecycle controller. A node whose Lease (kube-node-lease/<node>)
// is not renewed and whose Ready heartbeat does not move for the grace
// period gets Ready (and the pressure conditions) Unknown; each node gets
// the NoSchedule taints its conditions call for (not-ready, unreachable,
// memory/disk/pid-pressure, network-unavailable, unschedulable) and, when
// not Ready, the NoExecute not-ready or unreachable taint that the taint
// eviction controller acts on. Taints go when their cause does. While
// every node is unhealthy, no node has a NoExecute taint.
//
// The decisions (observe, expired, desiredTaints, disruption) are pure;
// the Controller runs a pass over every node each monitor period.
package nodelifecycle

import (
	"context"
	"errors"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/periodic"
	"github.com/kite-project/kite/listwatch"
)

// Upstream's defaults (kube-controller-manager, 1.37).
const (
	DefaultGracePeriod        = 50 * time.Second
	DefaultStartupGracePeriod = 60 * time.Second
	DefaultMonitorPeriod      = 5 * time.Second
	DefaultEvictionRate       = 0.1 // nodes a second
)

// Options configure a Controller.
type Options struct {
	// Client watches nodes and leases and writes nodes. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// GracePeriod is --node-monitor-grace-period; 0 means 50 s.
	GracePeriod time.Duration
	// StartupGracePeriod is --node-startup-grace-period, for nodes that
	// never posted Ready; 0 means 60 s, or GracePeriod if that is longer.
	StartupGracePeriod time.Duration
	// MonitorPeriod is --node-monitor-period; 0 means 5 s or a fifth of
	// GracePeriod, whichever is shorter.
	MonitorPeriod time.Duration
	// EvictionRate is --node-eviction-rate: how many nodes a second may
	// get a new NoExecute taint; 0 means 0.1, negative no limit.
	EvictionRate float64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Controller is the runner. Run drives it.
type Controller struct {
	client                kubernetes.Interface
	grace, startup, every time.Duration
	evictEvery            time.Duration
	now                   func() time.Time
	nodes                 *informer.Informer[*v1.Node]
	leases                *informer.Informer[*coordv1.Lease]
	pods                  *informer.Informer[*v1.Pod]
	recorder              *events.Recorder

	// health, ready and lastTaint belong to the pass goroutine; ready is
	// each node's Ready status at the last pass.
	health    map[string]*health
	ready     map[string]v1.ConditionStatus
	lastTaint time.Time

	loop *periodic.Loop
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("node lifecycle controller: Client is required")
	}
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	if opts.StartupGracePeriod <= 0 {
		opts.StartupGracePeriod = max(DefaultStartupGracePeriod, opts.GracePeriod)
	}
	if opts.MonitorPeriod <= 0 {
		opts.MonitorPeriod = min(DefaultMonitorPeriod, opts.GracePeriod/5)
	}
	if opts.EvictionRate == 0 {
		opts.EvictionRate = DefaultEvictionRate
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{
		client: opts.Client, grace: opts.GracePeriod, startup: opts.StartupGracePeriod, every: opts.MonitorPeriod,
		now: opts.Now, health: map[string]*health{}, ready: map[string]v1.ConditionStatus{},
		recorder: events.New(events.Options{Client: opts.Client, Component: "node-controller"}),
		loop:     periodic.New(),
	}
	if opts.EvictionRate > 0 {
		c.evictEvery = time.Duration(float64(time.Second) / opts.EvictionRate)
	}
	kick := c.loop.Kick
	var err error
	c.nodes, err = informer.For(opts.Informers, informer.Options[*v1.Node]{
		Name: "nodes", Shape: informer.Shape{Resource: "nodes"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Nodes(), nil),
		Handlers: informer.Handlers[*v1.Node]{
			// A condition or spec change is tainted for at once, as
			// upstream's NoSchedule pass runs on node events.
			OnAdd: func(*v1.Node) { kick() },
			OnUpdate: func(old, n *v1.Node) {
				if !sameTaints(old.Spec.Taints, n.Spec.Taints) || old.Spec.Unschedulable != n.Spec.Unschedulable ||
					!sameConditionStatus(old, n) {
					kick()
				}
			},
		},
	})
	if err != nil {
		return nil, err
	}
	c.leases, err = informer.For(opts.Informers, informer.Options[*coordv1.Lease]{
		Name: "node leases", Shape: informer.Shape{Resource: "leases.coordination.k8s.io", Namespace: v1.NamespaceNodeLease},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoordinationV1().Leases(v1.NamespaceNodeLease), nil),
	})
	if err != nil {
		return nil, err
	}
	c.pods, err = informer.For(opts.Informers, informer.Options[*v1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers: map[string]listwatch.IndexFunc[*v1.Pod]{
			nodeNameIndex: informer.ByNodeName,
		},
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

const nodeNameIndex = informer.NodeNameIndex

func sameConditionStatus(a, b *v1.Node) bool {
	if len(a.Status.Conditions) != len(b.Status.Conditions) {
		return false
	}
	for i := range a.Status.Conditions {
		if a.Status.Conditions[i].Type != b.Status.Conditions[i].Type || a.Status.Conditions[i].Status != b.Status.Conditions[i].Status {
			return false
		}
	}
	return true
}

// Run monitors nodes until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { c.nodes.Run(ctx) })
	wg.Go(func() { c.leases.Run(ctx) })
	wg.Go(func() { c.pods.Run(ctx) })
	wg.Go(func() { c.recorder.Run(ctx) })
	if informer.WaitForSync(ctx, c.nodes, c.leases, c.pods) != nil {
		return
	}
	c.loop.Run(ctx, c.every, c.pass)
}

// WaitIdle returns once a whole pass has run after the call: every node
// change seen by then has been acted on.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// pass is one monitor period: health, then taints, for every node.
func (c *Controller) pass(ctx context.Context) {
	now := c.now()
	nodes := c.nodes.Store().SortedList()
	seen := map[string]bool{}
	for i, n := range nodes {
		seen[n.Name] = true
		lease, _ := c.leases.Store().Get(v1.NamespaceNodeLease + "/" + n.Name)
		h := observe(c.health[n.Name], n, lease, now)
		c.health[n.Name] = h
		if stale := expired(n, h, now, c.grace, c.startup); stale != nil && !c.leaseRenewed(ctx, n.Name, h) {
			updated, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, stale, metav1.UpdateOptions{})
			if err != nil {
				if ctx.Err() == nil && !apierrors.IsNotFound(err) {
					klog.FromContext(ctx).V(2).Info("Could not mark a node Unknown", "node", n.Name, "err", err)
				}
				continue
			}
			c.health[n.Name] = &health{status: updated.Status.DeepCopy(), lease: h.lease, probe: h.probe}
			nodes[i] = updated
		}
		c.noteReady(ctx, nodes[i])
	}
	for name := range c.health {
		if !seen[name] {
			delete(c.health, name)
			delete(c.ready, name)
		}
	}
	paused, full := disruption(nodes)
	for _, n := range nodes {
		hold := paused[n.Labels[zoneLabel]]
		if !hold && c.evictEvery > 0 && noExecuteTaint(n) != "" && !hasNoExecute(n) && now.Sub(c.lastTaint) < c.evictEvery {
			hold = true // the eviction rate limit: this node waits a pass
		}
		want := desiredTaints(n, !full, hold, now)
		if sameTaints(want, n.Spec.Taints) {
			continue
		}
		addsNoExecute := !hasNoExecute(n) && containsNoExecute(want)
		next := n.DeepCopy()
		next.Spec.Taints = want
		if _, err := c.client.CoreV1().Nodes().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			if ctx.Err() == nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				klog.FromContext(ctx).V(2).Info("Could not taint a node", "node", n.Name, "err", err)
			}
			continue
		}
		if addsNoExecute {
			c.lastTaint = now
		}
	}
}

// noteReady acts on a node's Ready leaving True (whoever wrote it), as
// upstream does: a node event, and every pod on the node not Ready.
func (c *Controller) noteReady(ctx context.Context, n *v1.Node) {
	cur := v1.ConditionUnknown
	if rc := readyCondition(&n.Status); rc != nil {
		cur = rc.Status
	}
	prev, known := c.ready[n.Name]
	c.ready[n.Name] = cur
	if !known || prev != v1.ConditionTrue || cur == v1.ConditionTrue {
		return
	}
	c.recorder.Event(n, "Node", v1.EventTypeNormal, "NodeNotReady", "Node "+n.Name+" status is now: NodeNotReady")
	pods, _ := c.pods.Store().ByIndex(nodeNameIndex, n.Name)
	for _, p := range pods {
		if err := c.markNotReady(ctx, p); err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).V(2).Info("Could not mark a pod not Ready", "pod", klog.KObj(p), "err", err)
		}
	}
}

// markNotReady is upstream's MarkPodsNotReady for one pod: its Ready
// condition turns False.
func (c *Controller) markNotReady(ctx context.Context, p *v1.Pod) error {
	if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
		return nil
	}
	next := p.DeepCopy()
	changed := false
	for i := range next.Status.Conditions {
		cond := &next.Status.Conditions[i]
		if cond.Type == v1.PodReady && cond.Status != v1.ConditionFalse {
			cond.Status, cond.LastTransitionTime = v1.ConditionFalse, metav1.NewTime(c.now())
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if _, err := c.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return err
	}
	c.recorder.Event(p, "Pod", v1.EventTypeWarning, "NodeNotReady", "Node is not ready")
	return nil
}

func hasNoExecute(n *v1.Node) bool { return containsNoExecute(n.Spec.Taints) }

func containsNoExecute(ts []v1.Taint) bool {
	for _, t := range ts {
		if managed(t) && t.Effect == v1.TaintEffectNoExecute {
			return true
		}
	}
	return false
}

// leaseRenewed is upstream's circuit breaker: before a node is marked
// Unknown, the live Lease is read, in case the cache is behind.
func (c *Controller) leaseRenewed(ctx context.Context, node string, h *health) bool {
	l, err := c.client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
	if err != nil || l.Spec.RenewTime == nil {
		return false
	}
	if h.lease == nil || h.lease.Spec.RenewTime == nil || h.lease.Spec.RenewTime.Before(l.Spec.RenewTime) {
		h.lease, h.probe = l, c.now()
		return true
	}
	return false
}
