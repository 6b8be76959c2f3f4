// Package nodeipam gives every Node its pod range, as
// kube-controller-manager's node IPAM controller with the RangeAllocator
// (pkg/controller/nodeipam/ipam/range_allocator.go): each node without
// spec.podCIDRs gets a free block of each cluster CIDR (--cluster-cidr,
// cut into --node-cidr-mask-size blocks), set once and never changed; the
// blocks in use are what the nodes hold, so a restart rebuilds them from
// the nodes and a deleted node's block is free again. A full range is
// upstream's CIDRNotAvailable event on the node. The node agent waits for
// its podCIDR and gives its pods addresses from it (docs/pod-network.md).
package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sync"

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

// ReasonCIDRNotAvailable is upstream's event reason for a node no block
// is left for.
const ReasonCIDRNotAvailable = "CIDRNotAvailable"

// Options configure a Controller.
type Options struct {
	// Client reads and patches nodes. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// ClusterCIDRs is --cluster-cidr: one CIDR, or an IPv4 and an IPv6
	// one; nil means DefaultClusterCIDR.
	ClusterCIDRs []string
	// NodeCIDRMaskSize is --node-cidr-mask-size, the IPv4 block size; 0
	// means DefaultNodeCIDRMaskSize. IPv6 blocks are /64.
	NodeCIDRMaskSize int
	// Reserved are CIDRs no block may overlap: the Services' ranges.
	Reserved []string
}

// Controller sets nodes' podCIDRs. Run drives it.
type Controller struct {
	client   kubernetes.Interface
	ranges   []Range
	reserved []netip.Prefix
	loop     *controller.Loop[string]
	queue    *workqueue.Queue[string]
	nodes    *informer.Informer[*v1.Node]
	recorder *events.Recorder

	// mu guards pending and next: one worker syncs, but the delete
	// handler drops pending entries from the cache's goroutine.
	mu sync.Mutex
	// pending are the blocks patched onto a node that the cache does not
	// show yet, so that a node synced meanwhile never gets them too.
	pending map[string][]netip.Prefix
	next    []int
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New("node ipam controller: Client is required")
	}
	if opts.ClusterCIDRs == nil {
		opts.ClusterCIDRs = []string{DefaultClusterCIDR}
	}
	if opts.NodeCIDRMaskSize == 0 {
		opts.NodeCIDRMaskSize = DefaultNodeCIDRMaskSize
	}
	ranges, err := ParseRanges(opts.ClusterCIDRs, opts.NodeCIDRMaskSize, DefaultNodeCIDRMaskSizeIPv6)
	if err != nil {
		return nil, fmt.Errorf("node ipam controller: %w", err)
	}
	c := &Controller{client: opts.Client, ranges: ranges, queue: workqueue.New[string](workqueue.Options{}),
		recorder: events.New(events.Options{Client: opts.Client, Component: "cidrAllocator"}),
		pending:  map[string][]netip.Prefix{}}
	for _, s := range opts.Reserved {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("node ipam controller: reserved CIDR %q: %w", s, err)
		}
		c.reserved = append(c.reserved, p.Masked())
	}
	c.nodes, err = informer.For(opts.Informers, informer.Options[*v1.Node]{
		Name: "nodes", Shape: informer.Shape{Resource: "nodes"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Nodes(), nil),
		Handlers: informer.Handlers[*v1.Node]{
			OnAdd:    func(n *v1.Node) { c.queue.Add(n.Name) },
			OnUpdate: func(_, n *v1.Node) { c.queue.Add(n.Name) },
			// A deleted node's blocks are free: nodes waiting for one
			// (the range was full) look again.
			OnDelete: func(n *v1.Node) {
				c.mu.Lock()
				delete(c.pending, n.Name)
				c.mu.Unlock()
				for _, o := range c.nodes.Store().List() {
					if NeedsCIDR(o) {
						c.queue.Add(o.Name)
					}
				}
			},
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "node-ipam-controller", Queue: c.queue, Informers: []controller.Informer{c.nodes},
		Recorder: c.recorder, Sync: c.sync}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the node cache is listed and no node is queued or
// being synced.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// sync gives the named node its blocks if it has none.
func (c *Controller) sync(ctx context.Context, name string) error {
	node, ok := c.nodes.Store().Get(name)
	// The lock is not held across the patch, so that the delete handler
	// (the cache's goroutine) never waits on the API; one worker syncs,
	// so nothing else chooses meanwhile.
	c.mu.Lock()
	if !ok || !NeedsCIDR(node) {
		// Gone, or its podCIDRs show in the cache now: they count as
		// used through the node itself.
		if !ok || node.DeletionTimestamp == nil {
			delete(c.pending, name)
		}
		c.mu.Unlock()
		return nil
	}
	if _, ok := c.pending[name]; ok {
		c.mu.Unlock()
		return nil // patched; its update event comes
	}
	blocks, next, err := Choose(c.ranges, Used(c.nodes.Store().List(), c.pending), c.reserved, c.next)
	c.mu.Unlock()
	if errors.Is(err, ErrFull) {
		c.recorder.Event(node, "Node", v1.EventTypeNormal, ReasonCIDRNotAvailable, fmt.Sprintf("Node %s status is now: %s", node.Name, ReasonCIDRNotAvailable))
		return fmt.Errorf("node %s: %w", name, err)
	}
	if err != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	cidrs := make([]string, len(blocks))
	for i, b := range blocks {
		cidrs[i] = b.String()
	}
	// The node's resourceVersion and uid make the patch a compare and
	// swap: a node changed (given a podCIDR by someone else) or replaced
	// since the cache saw it is a conflict, retried from the cache.
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": node.ResourceVersion, "uid": node.UID},
		"spec":     map[string]any{"podCIDR": cidrs[0], "podCIDRs": cidrs},
	})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "kube-controller-manager"})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("set podCIDRs %v of node %s: %w", cidrs, name, err)
	}
	c.mu.Lock()
	c.pending[name], c.next = blocks, next
	c.mu.Unlock()
	if _, ok := c.nodes.Store().Get(name); !ok {
		// Deleted while it was patched: the next sync frees its blocks.
		c.queue.Add(name)
	}
	klog.FromContext(ctx).V(2).Info("Set node PodCIDR", "node", name, "podCIDRs", cidrs)
	return nil
}
