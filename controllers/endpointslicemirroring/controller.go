// Package endpointslicemirroring mirrors the Endpoints of Services
// without a selector into EndpointSlices: the job of
// kube-controller-manager's endpointslicemirroring controller.
//
// A Service without a selector gets its endpoints from whoever writes its
// core/v1 Endpoints by hand. The proxy and the cluster DNS read
// EndpointSlices, so for such a Service this controller keeps slices
// labelled kubernetes.io/service-name and
// endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io,
// owned by the Endpoints, holding its addresses (decide.go); it deletes
// them when the Endpoints, or the Service, goes, or the Service gets a
// selector.
package endpointslicemirroring

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/endpointslice"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

const (
	// mirrorIndex indexes mirrored slices by their Endpoints' key.
	mirrorIndex  = "mirrored-endpoints"
	fieldManager = "endpointslicemirroring-controller"
)

// Options configure a Controller.
type Options struct {
	// Client watches Services, Endpoints and EndpointSlices and writes
	// EndpointSlices. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
}

// Controller is the EndpointSlice mirroring controller. Run drives it.
type Controller struct {
	client kubernetes.Interface
	loop   *controller.Loop[string]
	queue  *workqueue.Queue[string]
	// expect holds an Endpoints key back until the slices it created and
	// deleted are in the cache, so that a slow watch never makes it
	// create a slice twice.
	expect    *controller.Expectations
	services  *informer.Informer[*corev1.Service]
	endpoints *informer.Informer[*corev1.Endpoints]
	slices    *informer.Informer[*discoveryv1.EndpointSlice]
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("endpointslicemirroring controller: Client is required")
	}
	c := &Controller{client: opts.Client, queue: workqueue.New[string](workqueue.Options{}), expect: controller.NewExpectations(nil)}
	// A Service and its Endpoints share a key: either changing queues it.
	svcKey := func(s *corev1.Service) { c.queue.Add(controller.Key(s)) }
	epKey := func(e *corev1.Endpoints) { c.queue.Add(controller.Key(e)) }
	var err error
	c.services, err = informer.For(opts.Informers, informer.Options[*corev1.Service]{
		Name: "services", Shape: informer.Shape{Resource: "services"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Services(""), nil),
		Handlers: informer.Handlers[*corev1.Service]{
			OnAdd: svcKey, OnUpdate: func(_, s *corev1.Service) { svcKey(s) }, OnDelete: svcKey,
		},
	})
	if err != nil {
		return nil, err
	}
	c.endpoints, err = informer.For(opts.Informers, informer.Options[*corev1.Endpoints]{
		Name: "endpoints", Shape: informer.Shape{Resource: "endpoints"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Endpoints(""), nil),
		Handlers: informer.Handlers[*corev1.Endpoints]{
			OnAdd: epKey, OnUpdate: func(_, e *corev1.Endpoints) { epKey(e) }, OnDelete: epKey,
		},
	})
	if err != nil {
		return nil, err
	}
	c.slices, err = informer.For(opts.Informers, informer.Options[*discoveryv1.EndpointSlice]{
		Name: "endpointslices", Shape: informer.Shape{Resource: "endpointslices.discovery.k8s.io"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.DiscoveryV1().EndpointSlices(""), nil),
		Indexers: map[string]listwatch.IndexFunc[*discoveryv1.EndpointSlice]{mirrorIndex: func(s *discoveryv1.EndpointSlice) ([]string, error) {
			if k, ok := mirrorOf(s); ok {
				return []string{k}, nil
			}
			return nil, nil
		}},
		Handlers: informer.Handlers[*discoveryv1.EndpointSlice]{
			OnAdd: func(s *discoveryv1.EndpointSlice) {
				if k, ok := mirrorOf(s); ok {
					c.expect.Created(k, "")
					c.queue.Add(k)
				}
			},
			OnUpdate: func(_, s *discoveryv1.EndpointSlice) {
				if k, ok := mirrorOf(s); ok {
					c.queue.Add(k)
				}
			},
			OnDelete: func(s *discoveryv1.EndpointSlice) {
				if k, ok := mirrorOf(s); ok {
					c.expect.Deleted(k, controller.Key(s))
					c.queue.Add(k)
				}
			},
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "endpointslicemirroring-controller", Queue: c.queue,
		Informers: []controller.Informer{c.services, c.endpoints, c.slices}, Sync: c.sync}
	return c, nil
}

// mirrorOf is the key of the Endpoints whose mirrored slice s is.
func mirrorOf(s *discoveryv1.EndpointSlice) (string, bool) {
	name := s.Labels[discoveryv1.LabelServiceName]
	if name == "" || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy {
		return "", false
	}
	return s.Namespace + "/" + name, true
}

// Run syncs Endpoints until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *Controller) sync(ctx context.Context, key string) error {
	if !c.expect.Satisfied(key) {
		// The slices' events queue the key again; the expiry bounds the
		// wait if one never comes.
		c.queue.AddAfter(key, c.expect.Expiry(key))
		return nil
	}
	ep, _ := c.endpoints.Store().Get(key)
	svc, _ := c.services.Store().Get(key)
	existing, _ := c.slices.Store().ByIndex(mirrorIndex, key)
	var plan endpointslice.Plan
	if Mirrors(ep, svc) {
		var owned []*discoveryv1.EndpointSlice
		for _, s := range existing {
			// A slice of an older Endpoints of the same name is deleted,
			// not reused.
			if ref := metav1.GetControllerOf(s); ref != nil && ref.UID == ep.UID {
				owned = append(owned, s)
			} else {
				plan.Delete = append(plan.Delete, s)
			}
		}
		p := Reconcile(ep, Desired(ep), owned)
		plan.Create, plan.Update, plan.Delete = p.Create, p.Update, append(plan.Delete, p.Delete...)
	} else {
		// Upstream deletes the mirrored slices itself rather than leave
		// them to the garbage collector: the Service may still be there.
		plan.Delete = existing
	}
	if plan.Changes() == 0 {
		c.expect.Forget(key)
		return nil
	}
	ns, _, _ := strings.Cut(key, "/")
	if err := endpointslice.Apply(ctx, c.client.DiscoveryV1().EndpointSlices(ns), key, fieldManager, plan, c.expect); err != nil {
		return fmt.Errorf("mirror Endpoints %s: %w", key, err)
	}
	klog.FromContext(ctx).V(4).Info("Mirrored Endpoints", "endpoints", key, "created", len(plan.Create), "updated", len(plan.Update), "deleted", len(plan.Delete))
	return nil
}
