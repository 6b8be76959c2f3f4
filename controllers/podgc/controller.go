// Package podgc removes pods nobody else will: kube-controller-manager's
// pod garbage collector. Every period it deletes the oldest terminated
// pods beyond the threshold, and force-deletes, after marking them Failed,
// pods bound to a node that no longer exists (after a quarantine and a
// live check; with a DisruptionTarget condition), terminating pods that
// were never scheduled, and terminating pods of out-of-service nodes, as
// upstream does.
package podgc

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/periodic"
	"github.com/kite-project/kite/listwatch"
)

// Upstream's defaults (pkg/controller/podgc).
const (
	DefaultPeriod              = 20 * time.Second
	DefaultQuarantine          = 40 * time.Second
	DefaultTerminatedThreshold = 12500
)

// Options configure a Controller.
type Options struct {
	// Client watches pods and nodes and deletes pods. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// TerminatedThreshold is --terminated-pod-gc-threshold: 0 means
	// 12500, negative keeps every terminated pod.
	TerminatedThreshold int
	// Period is how often it looks; 0 means 20 s.
	Period time.Duration
	// Quarantine is how long a node must be missing before its pods go;
	// 0 means 40 s.
	Quarantine time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Controller is the runner. Run drives it.
type Controller struct {
	client     kubernetes.Interface
	threshold  int
	period     time.Duration
	quarantine time.Duration
	now        func() time.Time
	pods       *informer.Informer[*v1.Pod]
	nodes      *informer.Informer[*v1.Node]

	// missing and deleted belong to the pass goroutine: when each absent
	// node was first found absent, and the pods this controller deleted
	// that the cache may still show (so that a stale cache never makes it
	// delete more terminated pods than the threshold asks).
	missing map[string]time.Time
	deleted map[types.UID]bool

	loop *periodic.Loop
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("pod gc: Client is required")
	}
	if opts.TerminatedThreshold == 0 {
		opts.TerminatedThreshold = DefaultTerminatedThreshold
	}
	if opts.Period <= 0 {
		opts.Period = DefaultPeriod
	}
	if opts.Quarantine <= 0 {
		opts.Quarantine = DefaultQuarantine
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{
		client: opts.Client, threshold: opts.TerminatedThreshold, period: opts.Period, quarantine: opts.Quarantine,
		now: opts.Now, missing: map[string]time.Time{}, deleted: map[types.UID]bool{}, loop: periodic.New(),
	}
	var err error
	if c.pods, err = informer.For(opts.Informers, informer.Options[*v1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"}, ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
	}); err != nil {
		return nil, err
	}
	if c.nodes, err = informer.For(opts.Informers, informer.Options[*v1.Node]{
		Name: "nodes", Shape: informer.Shape{Resource: "nodes"}, ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Nodes(), nil),
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run collects until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { c.pods.Run(ctx) })
	wg.Go(func() { c.nodes.Run(ctx) })
	if informer.WaitForSync(ctx, c.pods, c.nodes) != nil {
		return
	}
	c.loop.Run(ctx, c.period, c.pass)
}

// WaitIdle returns once a whole pass has run after the call.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *Controller) pass(ctx context.Context) {
	var pods []*v1.Pod
	cached := map[types.UID]bool{}
	for _, p := range c.pods.Store().List() {
		cached[p.UID] = true
		// Every delete here has grace 0: a pod deleted here that the
		// cache still shows is the cache lagging, unless finalizers hold
		// it.
		if !c.deleted[p.UID] || len(p.Finalizers) > 0 {
			pods = append(pods, p)
		}
	}
	for uid := range c.deleted {
		if !cached[uid] {
			delete(c.deleted, uid)
		}
	}
	for _, p := range Terminated(pods, c.threshold) {
		zero := int64(0)
		c.delete(ctx, p, &zero)
	}
	now := c.now()
	absent := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			if p.DeletionTimestamp != nil {
				c.failAndForceDelete(ctx, p, "")
			}
			continue
		}
		if n, ok := c.nodes.Store().Get(p.Spec.NodeName); ok {
			if p.DeletionTimestamp != nil && OutOfService(n) {
				c.failAndForceDelete(ctx, p, "")
			}
			continue
		}
		if _, ok := absent[p.Spec.NodeName]; !ok {
			absent[p.Spec.NodeName] = c.confirmedGone(ctx, p.Spec.NodeName, now)
		}
		if absent[p.Spec.NodeName] {
			c.failAndForceDelete(ctx, p, "PodGC: node no longer exists")
		}
	}
	for name := range c.missing {
		if _, ok := absent[name]; !ok {
			delete(c.missing, name)
		}
	}
}

// OutOfService says whether a node is not Ready and tainted
// node.kubernetes.io/out-of-service: an admin's word that it is down for
// good, so its terminating pods may go without its agent.
func OutOfService(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
			return false
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == v1.TaintNodeOutOfService {
			return true
		}
	}
	return false
}

// Terminated picks the terminated pods beyond threshold, oldest first
// (negative threshold: none).
func Terminated(pods []*v1.Pod, threshold int) []*v1.Pod {
	if threshold < 0 {
		return nil
	}
	var done []*v1.Pod
	for _, p := range pods {
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			done = append(done, p)
		}
	}
	if len(done) <= threshold {
		return nil
	}
	sort.SliceStable(done, func(i, j int) bool {
		a, b := done[i].CreationTimestamp, done[j].CreationTimestamp
		if a.Equal(&b) {
			return done[i].Name < done[j].Name
		}
		return a.Before(&b)
	})
	return done[:len(done)-threshold]
}

// confirmedGone says whether node has been missing from the cache for the
// quarantine and a live GET says it does not exist.
func (c *Controller) confirmedGone(ctx context.Context, node string, now time.Time) bool {
	first, ok := c.missing[node]
	if !ok {
		c.missing[node] = now
		return false
	}
	if now.Sub(first) < c.quarantine {
		return false
	}
	_, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// failAndForceDelete marks a pod Failed (with DisruptionTarget/DeletionByPodGC
// when message is set) unless it is terminal, then deletes it at once.
func (c *Controller) failAndForceDelete(ctx context.Context, p *v1.Pod, message string) {
	if p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
		status := map[string]any{"phase": v1.PodFailed}
		if message != "" {
			status["conditions"] = []map[string]any{{
				"type": v1.DisruptionTarget, "status": v1.ConditionTrue, "reason": "DeletionByPodGC",
				"message": message, "lastTransitionTime": metav1.Now(),
			}}
		}
		patch, _ := json.Marshal(map[string]any{"status": status})
		_, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Could not mark a pod Failed", "pod", klog.KObj(p), "err", err)
		}
	}
	zero := int64(0)
	c.delete(ctx, p, &zero)
}

func (c *Controller) delete(ctx context.Context, p *v1.Pod, grace *int64) {
	uid := p.UID
	err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: grace, Preconditions: &metav1.Preconditions{UID: &uid},
	})
	switch {
	case err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		c.deleted[p.UID] = true
	case ctx.Err() == nil:
		klog.FromContext(ctx).V(2).Info("Could not delete a pod", "pod", klog.KObj(p), "err", err)
	}
}
