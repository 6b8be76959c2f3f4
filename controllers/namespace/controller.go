// Package namespace empties and removes terminating namespaces: the job of
// kube-controller-manager's namespace controller.
//
// Deleting a namespace only marks it Terminating (registry/builtin). The
// Controller then deletes every object in it, resource by resource (every
// namespaced resource discovery lists with the deletecollection verb),
// waits until nothing is left (pods bound to a node leave only once their
// node has stopped them), removes the "kubernetes" finalizer through the
// namespace's finalize subresource, and deletes the namespace for good.
package namespace

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// Options configure a Controller.
type Options struct {
	// Client reads namespaces and finalizes them; Dynamic deletes their
	// content. Required.
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// Retry is how soon a namespace that still has content is looked at
	// again; 0 means one second.
	Retry time.Duration
}

// Controller removes terminating namespaces. Run drives it.
type Controller struct {
	client     kubernetes.Interface
	dynamic    dynamic.Interface
	discovery  discovery.DiscoveryInterface
	retry      time.Duration
	loop       *controller.Loop[string]
	queue      *workqueue.Queue[string]
	namespaces *informer.Informer[*v1.Namespace]
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil || opts.Dynamic == nil {
		return nil, fmt.Errorf("namespace controller: Client and Dynamic are required")
	}
	c := &Controller{client: opts.Client, dynamic: opts.Dynamic, discovery: opts.Client.Discovery(), retry: opts.Retry,
		queue: workqueue.New[string](workqueue.Options{})}
	if c.retry == 0 {
		c.retry = time.Second
	}
	enqueue := func(ns *v1.Namespace) {
		if ns.DeletionTimestamp != nil {
			c.queue.Add(ns.Name)
		}
	}
	var err error
	c.namespaces, err = informer.For(opts.Informers, informer.Options[*v1.Namespace]{
		Name: "namespaces", Shape: informer.Shape{Resource: "namespaces"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Namespaces(), nil),
		Handlers: informer.Handlers[*v1.Namespace]{
			OnAdd:    enqueue,
			OnUpdate: func(_, ns *v1.Namespace) { enqueue(ns) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "namespace-controller", Queue: c.queue, Informers: []controller.Informer{c.namespaces}, Sync: c.sync}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the namespaces are listed and no namespace is
// queued or being worked on (one waiting for its content to go is not).
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// sync empties and removes a terminating namespace; one that still has
// content is looked at again after the retry period.
func (c *Controller) sync(ctx context.Context, name string) error {
	ns, ok := c.namespaces.Store().Get(name)
	if !ok || ns.DeletionTimestamp == nil {
		return nil
	}
	done, err := c.delete(ctx, ns)
	if err != nil {
		return err // each names the namespace
	}
	if !done {
		c.queue.AddAfter(name, c.retry)
	}
	return nil
}

// delete empties ns and removes it once empty; it reports whether ns is
// gone (or only waits on finalizers of others).
func (c *Controller) delete(ctx context.Context, ns *v1.Namespace) (bool, error) {
	resources, err := c.contentResources()
	if err != nil {
		return false, err
	}
	remaining := 0
	for _, gvr := range resources {
		r := c.dynamic.Resource(gvr).Namespace(ns.Name)
		if err := r.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete %s in %s: %w", gvr.Resource, ns.Name, err)
		}
		left, err := r.List(ctx, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("list %s in %s: %w", gvr.Resource, ns.Name, err)
		}
		if err == nil {
			remaining += meta.LenList(left)
		}
	}
	if remaining > 0 {
		return false, nil
	}
	if slices.Contains(ns.Spec.Finalizers, v1.FinalizerKubernetes) {
		cur := ns.DeepCopy()
		cur.Spec.Finalizers = slices.DeleteFunc(cur.Spec.Finalizers, func(f v1.FinalizerName) bool { return f == v1.FinalizerKubernetes })
		_, err := c.client.CoreV1().Namespaces().Finalize(ctx, cur, metav1.UpdateOptions{FieldManager: "namespace-controller"})
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case apierrors.IsConflict(err):
			return false, nil // the next event brings the new version
		case err != nil:
			return false, fmt.Errorf("finalize namespace %s: %w", ns.Name, err)
		}
	}
	uid := ns.UID
	err = c.client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		// Other spec or metadata finalizers remain: their owners remove
		// them and the namespace goes then.
		return true, nil
	}
	return false, fmt.Errorf("delete namespace %s: %w", ns.Name, err)
}

// contentResources are the namespaced resources that can be listed and
// deleted by collection, in their preferred versions.
func (c *Controller) contentResources() ([]schema.GroupVersionResource, error) {
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discover namespaced resources: %w", err)
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if slices.Contains(r.Verbs, "deletecollection") && slices.Contains(r.Verbs, "list") {
				out = append(out, gv.WithResource(r.Name))
			}
		}
	}
	return out, nil
}
