// Package tainteviction deletes pods from nodes with NoExecute taints they
// do not tolerate, or tolerate only for a while: kube-controller-manager's
// taint eviction controller. Decide is the rule; the Controller watches
// nodes and pods, and evicts a pod once its time is up by marking it
// DisruptionTarget (DeletionByTaintManager) and deleting it gracefully.
package tainteviction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

const nodeNameIndex = informer.NodeNameIndex

// Options configure a Controller.
type Options struct {
	// Client watches nodes and pods and deletes pods. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Controller is the runner. Run drives it.
type Controller struct {
	client   kubernetes.Interface
	now      func() time.Time
	loop     *controller.Loop[string]
	queue    *workqueue.Queue[string]
	nodes    *informer.Informer[*v1.Node]
	pods     *informer.Informer[*v1.Pod]
	recorder *events.Recorder

	// mu guards since: when each pod (namespace/name) was first seen on
	// a node whose NoExecute taints it tolerates for a while.
	mu    sync.Mutex
	since map[string]time.Time
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("taint eviction controller: Client is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{
		client: opts.Client, now: opts.Now, queue: workqueue.New[string](workqueue.Options{}),
		recorder: events.New(events.Options{Client: opts.Client, Component: "taint-eviction-controller"}),
		since:    map[string]time.Time{},
	}
	var err error
	c.nodes, err = informer.For(opts.Informers, informer.Options[*v1.Node]{
		Name: "nodes", Shape: informer.Shape{Resource: "nodes"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Nodes(), nil),
		Handlers: informer.Handlers[*v1.Node]{
			OnAdd:    c.nodeChanged,
			OnUpdate: func(_, n *v1.Node) { c.nodeChanged(n) },
		},
	})
	if err != nil {
		return nil, err
	}
	queuePod := func(p *v1.Pod) {
		if p.Spec.NodeName != "" {
			c.queue.Add(p.Namespace + "/" + p.Name)
		}
	}
	c.pods, err = informer.For(opts.Informers, informer.Options[*v1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers: map[string]listwatch.IndexFunc[*v1.Pod]{
			nodeNameIndex: informer.ByNodeName,
		},
		Handlers: informer.Handlers[*v1.Pod]{
			OnAdd:    queuePod,
			OnUpdate: func(_, p *v1.Pod) { queuePod(p) },
			OnDelete: func(p *v1.Pod) {
				c.mu.Lock()
				delete(c.since, p.Namespace+"/"+p.Name)
				c.mu.Unlock()
			},
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "taint-eviction-controller", Queue: c.queue, Informers: []controller.Informer{c.nodes, c.pods},
		Recorder: c.recorder, Sync: c.sync,
		// Pods queued before the nodes were listed saw no taints: look again.
		Started: func(context.Context) {
			for _, n := range c.nodes.Store().List() {
				c.nodeChanged(n)
			}
		}}
	return c, nil
}

func (c *Controller) nodeChanged(n *v1.Node) {
	pods, _ := c.pods.Store().ByIndex(nodeNameIndex, n.Name)
	for _, p := range pods {
		c.queue.Add(p.Namespace + "/" + p.Name)
	}
}

// Run evicts until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once both caches are listed and no pod is queued or
// being looked at (pods waiting out their tolerationSeconds are not).
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// sync evicts the pod k once its taints' time is up.
func (c *Controller) sync(ctx context.Context, k string) error {
	pod, ok := c.pods.Store().Get(k)
	if !ok || pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		return nil
	}
	node, ok := c.nodes.Store().Get(pod.Spec.NodeName)
	var d Decision
	if ok {
		d = Decide(pod, node.Spec.Taints)
	}
	now := c.now()
	c.mu.Lock()
	if !d.Evict {
		delete(c.since, k)
		c.mu.Unlock()
		return nil
	}
	start, seen := c.since[k]
	if !seen {
		start = now
		c.since[k] = now
	}
	c.mu.Unlock()
	if wait := start.Add(d.After).Sub(now); wait > 0 {
		c.queue.AddAfter(k, wait)
		return nil
	}
	if err := c.evict(ctx, pod); err != nil {
		return fmt.Errorf("evict pod %s: %w", k, err)
	}
	return nil
}

// evict marks the pod as a disruption target and deletes it, as upstream's
// addConditionAndDeletePod.
func (c *Controller) evict(ctx context.Context, pod *v1.Pod) error {
	c.recorder.Event(pod, "Pod", v1.EventTypeNormal, "TaintManagerEviction", "Marking for deletion Pod "+pod.Namespace+"/"+pod.Name)
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
		"type": v1.DisruptionTarget, "status": v1.ConditionTrue, "reason": "DeletionByTaintManager",
		"message": "Taint manager: deleting due to NoExecute taint", "lastTransitionTime": metav1.Now(),
	}}}})
	pods := c.client.CoreV1().Pods(pod.Namespace)
	if _, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	uid := pod.UID
	err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
