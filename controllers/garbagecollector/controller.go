// Package garbagecollector deletes objects whose owners are gone: the job
// of kube-controller-manager's garbage collector.
//
// It watches the metadata of every resource discovery lists with list,
// watch and delete (custom resources included: discovery is read again
// every DiscoveryPeriod, and a resource it no longer lists is no longer
// watched), keeps who owns whom by uid, and for each
// dependent asks the API whether its owners exist (an owner whose uid
// differs is absent). A dependent with no owner left is deleted; one whose
// owner is being deleted in the foreground is deleted too, and the owner
// loses its foregroundDeletion finalizer once no dependent with
// blockOwnerDeletion remains; an owner deleted with the orphan finalizer
// first has its dependents' references to it removed. Which finalizer an
// object gets on delete is the API server's business (registry).
package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
	"k8s.io/utils/lru"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/periodic"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// Options configure a Controller.
type Options struct {
	// Metadata reads, patches and deletes objects of any resource;
	// Discovery lists the resources. Required.
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
	// DiscoveryPeriod is how often discovery is read again, so that new
	// resources (CRDs) are watched; 0 means 30 s (upstream's resync).
	DiscoveryPeriod time.Duration
	// Workers process dependents in parallel; 0 means 20 (upstream's
	// --concurrent-gc-syncs).
	Workers int
}

// resource is a served resource, as discovery told.
type resource struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// node is what the collector keeps of one object.
type node struct {
	res        resource
	namespace  string
	name       string
	uid        types.UID
	rv         string
	owners     []metav1.OwnerReference
	finalizers []string
	deleting   bool
}

// Controller is the garbage collector. Run drives it.
type Controller struct {
	meta   metadata.Interface
	disc   discovery.DiscoveryInterface
	period time.Duration
	run    *controller.Loop[types.UID]
	queue  *workqueue.Queue[types.UID]
	loop   *periodic.Loop

	// mu guards the fields below.
	mu         sync.Mutex
	nodes      map[types.UID]*node
	dependents map[types.UID]map[types.UID]struct{}
	kinds      map[schema.GroupVersionKind]resource
	watched    map[schema.GroupVersionResource]*monitor
	// absent remembers the last owner uids found missing, as upstream's
	// absentOwnerCache (500): a uid never returns. It locks itself.
	absent *lru.Cache
	wg     sync.WaitGroup
}

// absentOwners is how many absent owner uids the collector remembers
// (upstream's absentOwnerCache size).
const absentOwners = 500

// monitor is the watch of one resource, stopped when discovery no longer
// lists the resource (its CRD was deleted).
type monitor struct {
	inf    *informer.Informer[*metav1.PartialObjectMetadata]
	cancel context.CancelFunc
	done   chan struct{}
}

// ignored are resources upstream's collector does not watch: events
// never own anything and are many.
var ignored = map[schema.GroupResource]bool{
	{Resource: "events"}:                         true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Metadata == nil || opts.Discovery == nil {
		return nil, fmt.Errorf("garbage collector: Metadata and Discovery are required")
	}
	if opts.DiscoveryPeriod <= 0 {
		opts.DiscoveryPeriod = 30 * time.Second
	}
	if opts.Workers <= 0 {
		opts.Workers = 20
	}
	c := &Controller{
		meta: opts.Metadata, disc: opts.Discovery, period: opts.DiscoveryPeriod,
		queue: workqueue.New[types.UID](workqueue.Options{}), loop: periodic.New(),
		nodes: map[types.UID]*node{}, dependents: map[types.UID]map[types.UID]struct{}{},
		kinds: map[schema.GroupVersionKind]resource{}, absent: lru.New(absentOwners),
		watched: map[schema.GroupVersionResource]*monitor{},
	}
	// Its caches are made as discovery finds resources: the periodic pass
	// runs beside the workers, and syncing waits on the caches it made.
	c.run = &controller.Loop[types.UID]{Name: "garbage-collector-controller", Queue: c.queue,
		Background:  []func(context.Context){func(ctx context.Context) { c.loop.Run(ctx, c.period, c.discover) }},
		WaitForSync: c.waitForSync, Workers: opts.Workers, Sync: c.process}
	return c, nil
}

// Run collects until ctx ends; the watches of the resources it found
// have stopped when it returns.
func (c *Controller) Run(ctx context.Context) {
	defer c.wg.Wait()
	c.run.Run(ctx)
}

// WaitIdle returns once discovery has been read since the call, every
// watched resource is listed and no dependent is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.run.WaitIdle(ctx) }

func (c *Controller) waitForSync(ctx context.Context) error {
	if err := c.loop.WaitIdle(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	var syncers []informer.Syncer
	for _, m := range c.watched {
		syncers = append(syncers, m.inf)
	}
	c.mu.Unlock()
	return informer.WaitForSync(ctx, syncers...)
}

// Watching returns the resources the collector watches now, sorted.
func (c *Controller) Watching() []schema.GroupVersionResource {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Collect(maps.Keys(c.watched))
	slices.SortFunc(out, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// discover makes the watched resources those discovery lists, as
// upstream's resyncMonitors: it starts watching new ones, stops watching
// those that went (a deleted CRD's), and rebuilds the kind-to-resource map
// owner references resolve through. A group whose discovery failed keeps
// what it had.
func (c *Controller) discover(ctx context.Context) {
	lists, err := c.disc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		klog.FromContext(ctx).Error(err, "Discovery failed")
		return
	}
	failed, _ := discovery.GroupDiscoveryFailedErrorGroups(err)
	want, kinds := deletable(lists)
	if len(want) == 0 {
		return // as upstream: an empty answer is no reason to stop everything
	}
	c.mu.Lock()
	for gvk, res := range c.kinds {
		if _, bad := failed[res.gvr.GroupVersion()]; bad {
			kinds[gvk] = res
			want[res.gvr] = res
		}
	}
	var start []resource
	for gvr, res := range want {
		if c.watched[gvr] == nil {
			start = append(start, res)
		}
	}
	var stop []*monitor
	for gvr, m := range c.watched {
		if _, ok := want[gvr]; !ok {
			stop = append(stop, m)
			delete(c.watched, gvr)
			klog.FromContext(ctx).V(2).Info("Stopped watching", "resource", gvr)
		}
	}
	c.kinds = kinds
	c.mu.Unlock()
	for _, m := range stop {
		m.cancel()
		<-m.done
	}
	for _, res := range start {
		c.watch(ctx, res)
	}
	c.mapOtherVersions()
}

// deletable returns the resources the collector watches out of
// discovery's preferred versions (list, watch and delete; not events),
// and the kinds they serve.
func deletable(lists []*metav1.APIResourceList) (map[schema.GroupVersionResource]resource, map[schema.GroupVersionKind]resource) {
	want := map[schema.GroupVersionResource]resource{}
	kinds := map[schema.GroupVersionKind]resource{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			verbs := metav1.Verbs(r.Verbs)
			if !slices.Contains(verbs, "list") || !slices.Contains(verbs, "watch") || !slices.Contains(verbs, "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			if ignored[gvr.GroupResource()] {
				continue
			}
			res := resource{gvr: gvr, namespaced: r.Namespaced}
			want[gvr] = res
			kinds[gv.WithKind(r.Kind)] = res
		}
	}
	return want, kinds
}

// mapOtherVersions maps the kinds of every served version to the watched
// resource: owner references may name any (apps/v1beta1 where apps/v1 is
// preferred).
func (c *Controller) mapOtherVersions() {
	_, all, err := c.disc.ServerGroupsAndResources()
	if err != nil && len(all) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	preferred := map[schema.GroupResource]resource{}
	for _, res := range c.kinds {
		preferred[res.gvr.GroupResource()] = res
	}
	for _, list := range all {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if res, ok := preferred[gv.WithResource(r.Name).GroupResource()]; ok {
				if _, mapped := c.kinds[gv.WithKind(r.Kind)]; !mapped {
					c.kinds[gv.WithKind(r.Kind)] = res
				}
			}
		}
	}
}

func (c *Controller) watch(ctx context.Context, res resource) {
	inf, err := informer.New(informer.Options[*metav1.PartialObjectMetadata]{
		Name:          "garbagecollector " + res.gvr.String(),
		ListerWatcher: listwatch.FromTypedClient(c.meta.Resource(res.gvr).Namespace(""), nil),
		Handlers: informer.Handlers[*metav1.PartialObjectMetadata]{
			OnAdd:    func(obj *metav1.PartialObjectMetadata) { c.observe(res, obj) },
			OnUpdate: func(_, obj *metav1.PartialObjectMetadata) { c.observe(res, obj) },
			OnDelete: func(obj *metav1.PartialObjectMetadata) { c.forget(obj) },
		},
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Could not watch", "resource", res.gvr)
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &monitor{inf: inf, cancel: cancel, done: make(chan struct{})}
	c.mu.Lock()
	c.watched[res.gvr] = m
	c.mu.Unlock()
	c.wg.Go(func() {
		defer close(m.done)
		inf.Run(ctx)
	})
}

// observe records an object's owners and queues what may need work: the
// object itself when it has owners or waits on the collector, and every
// owner it had or has (a foreground owner waits on it).
func (c *Controller) observe(res resource, obj *metav1.PartialObjectMetadata) {
	n := &node{res: res, namespace: obj.Namespace, name: obj.Name, uid: obj.UID, rv: obj.ResourceVersion,
		owners: obj.OwnerReferences, finalizers: obj.Finalizers, deleting: obj.DeletionTimestamp != nil}
	c.mu.Lock()
	old := c.nodes[obj.UID]
	c.nodes[obj.UID] = n
	touched := map[types.UID]bool{}
	if old != nil {
		for _, o := range old.owners {
			c.unlink(o.UID, obj.UID)
			touched[o.UID] = true
		}
	}
	for _, o := range n.owners {
		if c.dependents[o.UID] == nil {
			c.dependents[o.UID] = map[types.UID]struct{}{}
		}
		c.dependents[o.UID][obj.UID] = struct{}{}
		touched[o.UID] = true
	}
	c.mu.Unlock()
	if len(n.owners) > 0 || (n.deleting && hasGCFinalizer(n.finalizers)) {
		c.queue.Add(n.uid)
	}
	for uid := range touched {
		c.queue.Add(uid)
	}
}

func (c *Controller) forget(obj *metav1.PartialObjectMetadata) {
	c.mu.Lock()
	n := c.nodes[obj.UID]
	delete(c.nodes, obj.UID)
	var queue []types.UID
	if n != nil {
		for _, o := range n.owners {
			c.unlink(o.UID, obj.UID)
			queue = append(queue, o.UID)
		}
	}
	for d := range c.dependents[obj.UID] {
		queue = append(queue, d)
	}
	if len(c.dependents[obj.UID]) > 0 {
		// As upstream's graph builder: an owner seen deleted is absent
		// for its dependents without another look, even once its kind is
		// no longer served (the deleted CRD of a custom resource).
		c.absent.Add(obj.UID, struct{}{})
	}
	c.mu.Unlock()
	for _, uid := range queue {
		c.queue.Add(uid)
	}
}

func (c *Controller) unlink(owner, dependent types.UID) {
	if deps := c.dependents[owner]; deps != nil {
		delete(deps, dependent)
		if len(deps) == 0 {
			delete(c.dependents, owner)
		}
	}
}

func hasGCFinalizer(f []string) bool {
	return slices.Contains(f, metav1.FinalizerOrphanDependents) || slices.Contains(f, metav1.FinalizerDeleteDependents)
}

// snapshot returns a copy of the node and its dependents' nodes.
func (c *Controller) snapshot(uid types.UID) (*node, []*node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[uid]
	if n == nil {
		return nil, nil
	}
	cp := *n
	var deps []*node
	for d := range c.dependents[uid] {
		if dn := c.nodes[d]; dn != nil {
			dcp := *dn
			deps = append(deps, &dcp)
		}
	}
	return &cp, deps
}

func (c *Controller) process(ctx context.Context, uid types.UID) error {
	n, deps := c.snapshot(uid)
	if n == nil {
		return nil
	}
	if n.deleting {
		switch {
		case slices.Contains(n.finalizers, metav1.FinalizerOrphanDependents):
			return c.orphan(ctx, n, deps)
		case slices.Contains(n.finalizers, metav1.FinalizerDeleteDependents):
			return c.foreground(ctx, n, deps)
		}
		return nil
	}
	if len(n.owners) == 0 {
		return nil
	}
	states := map[types.UID]ownerState{}
	for _, ref := range n.owners {
		st, err := c.ownerState(ctx, n, ref)
		if err != nil {
			return err
		}
		states[ref.UID] = st
	}
	act := decide(n.owners, states, len(deps) > 0, n.finalizers)
	switch {
	case act.keep:
		return nil
	case len(act.removeRefs) > 0:
		return c.patchOwners(ctx, n, func(r metav1.OwnerReference) (metav1.OwnerReference, bool) {
			return r, !slices.Contains(act.removeRefs, r.UID)
		})
	}
	if len(act.unblockRefs) > 0 {
		if err := c.patchOwners(ctx, n, func(r metav1.OwnerReference) (metav1.OwnerReference, bool) {
			if slices.Contains(act.unblockRefs, r.UID) {
				r.BlockOwnerDeletion = new(bool)
			}
			return r, true
		}); err != nil {
			return err
		}
	}
	return c.delete(ctx, n, act.propagation)
}

// ownerState looks the owner up in the API: the cache may lag, and an
// object must not be deleted for an owner that exists.
func (c *Controller) ownerState(ctx context.Context, n *node, ref metav1.OwnerReference) (ownerState, error) {
	_, known := c.absent.Get(ref.UID)
	c.mu.Lock()
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	res, mapped := c.kinds[gv.WithKind(ref.Kind)]
	c.mu.Unlock()
	if known {
		return ownerAbsent, nil
	}
	if err != nil {
		return ownerAbsent, nil // no such owner can exist
	}
	if !mapped {
		c.loop.Kick() // perhaps a resource discovery has not shown yet
		return 0, fmt.Errorf("owner %s of %s/%s: kind %s is not served", ref.Name, n.namespace, n.name, gv.WithKind(ref.Kind))
	}
	ns := ""
	if res.namespaced {
		if n.namespace == "" {
			return ownerAbsent, nil // a namespaced owner of a cluster-scoped object is invalid
		}
		ns = n.namespace
	}
	got, err := c.meta.Resource(res.gvr).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return 0, fmt.Errorf("owner %s %s of %s/%s: %w", ref.Kind, ref.Name, n.namespace, n.name, err)
	case got.UID != ref.UID:
	case got.DeletionTimestamp != nil && slices.Contains(got.Finalizers, metav1.FinalizerDeleteDependents):
		return ownerWaiting, nil
	default:
		return ownerPresent, nil
	}
	c.absent.Add(ref.UID, struct{}{})
	return ownerAbsent, nil
}

// orphan removes the references of n's dependents to it, then n's orphan
// finalizer.
func (c *Controller) orphan(ctx context.Context, n *node, deps []*node) error {
	for _, d := range deps {
		if err := c.patchOwners(ctx, d, func(r metav1.OwnerReference) (metav1.OwnerReference, bool) { return r, r.UID != n.uid }); err != nil {
			return err
		}
	}
	return c.removeFinalizer(ctx, n, metav1.FinalizerOrphanDependents)
}

// foreground deletes n's dependents and removes its foregroundDeletion
// finalizer once none blocks it any more.
func (c *Controller) foreground(ctx context.Context, n *node, deps []*node) error {
	blocked := false
	for _, d := range deps {
		if blocking(d.owners, n.uid) {
			blocked = true
		}
		if !d.deleting {
			c.queue.Add(d.uid)
		}
	}
	if blocked {
		return nil // their deletion queues n again
	}
	return c.removeFinalizer(ctx, n, metav1.FinalizerDeleteDependents)
}

// delete deletes n with the propagation policy its owners ask for.
//
// The delete is conditional on the version the decision was made from:
// the graph's copy may lag a change the collector itself just made (an
// owner's orphaning removes its references from the dependents, then the
// owner goes), and deciding from the stale copy would delete an orphan.
// Upstream re-reads the object before deciding; a resourceVersion
// precondition gives the same guarantee in one request. On a conflict the
// watch brings the newer version, and observe queues it again if it still
// has owners.
func (c *Controller) delete(ctx context.Context, n *node, policy metav1.DeletionPropagation) error {
	uid, rv := n.uid, n.rv
	err := c.meta.Resource(n.res.gvr).Namespace(n.namespace).Delete(ctx, n.name, metav1.DeleteOptions{
		PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s %s/%s: %w", n.res.gvr.Resource, n.namespace, n.name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted", "resource", n.res.gvr, "namespace", n.namespace, "name", n.name, "propagation", policy)
	return nil
}

// patchOwners rewrites n's owner references through keep, with n's
// resourceVersion as precondition (a conflict is retried with the newer
// object). A JSON merge patch works for every resource, custom ones too.
func (c *Controller) patchOwners(ctx context.Context, n *node, keep func(metav1.OwnerReference) (metav1.OwnerReference, bool)) error {
	refs := []metav1.OwnerReference{}
	for _, r := range n.owners {
		if r, ok := keep(r); ok {
			refs = append(refs, r)
		}
	}
	return c.patchMeta(ctx, n, map[string]any{"ownerReferences": refs})
}

func (c *Controller) removeFinalizer(ctx context.Context, n *node, f string) error {
	rest := []string{}
	for _, x := range n.finalizers {
		if x != f {
			rest = append(rest, x)
		}
	}
	return c.patchMeta(ctx, n, map[string]any{"finalizers": rest})
}

func (c *Controller) patchMeta(ctx context.Context, n *node, fields map[string]any) error {
	fields["resourceVersion"] = n.rv
	fields["uid"] = n.uid
	body, err := json.Marshal(map[string]any{"metadata": fields})
	if err != nil {
		return err
	}
	_, err = c.meta.Resource(n.res.gvr).Namespace(n.namespace).Patch(ctx, n.name, types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patch %s %s/%s: %w", n.res.gvr.Resource, n.namespace, n.name, err)
	}
	return nil
}
