// Package endpointslice fills Services' EndpointSlices from their pods:
// the job of kube-controller-manager's endpointslice controller.
//
// For every Service with a selector (not ExternalName) it keeps
// EndpointSlices labelled kubernetes.io/service-name and
// endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io,
// owned by the Service, listing the pods the selector matches that have
// an IP and have not finished: ready, serving and terminating from the
// pod's Ready condition and deletionTimestamp (ready whatever the pod
// when publishNotReadyAddresses), targetPorts resolved per pod (a named
// port by the pod's container port), hostname when the pod's subdomain
// is the Service, nodeName and the pod as targetRef, at most 100
// endpoints a slice (decide.go).
package endpointslice

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

const (
	namespaceIndex = informer.NamespaceIndex
	// serviceIndex indexes managed slices by their Service's key.
	serviceIndex = "service"
	fieldManager = "endpointslice-controller"
)

// Options configure a Controller.
type Options struct {
	// Client watches Services, pods and EndpointSlices and writes
	// EndpointSlices. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
	// MaxEndpointsPerSlice is --max-endpoints-per-slice; 0 means 100.
	MaxEndpointsPerSlice int
}

// Controller is the EndpointSlice controller. Run drives it.
type Controller struct {
	client kubernetes.Interface
	max    int
	loop   *controller.Loop[string]
	queue  *workqueue.Queue[string]
	// expect holds a Service back until the slices it created and
	// deleted are in the cache, so a slow watch never makes it create a
	// slice twice (upstream's EndpointSliceTracker).
	expect   *controller.Expectations
	services *informer.Informer[*corev1.Service]
	pods     *informer.Informer[*corev1.Pod]
	slices   *informer.Informer[*discoveryv1.EndpointSlice]
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("endpointslice controller: Client is required")
	}
	c := &Controller{client: opts.Client, max: opts.MaxEndpointsPerSlice, queue: workqueue.New[string](workqueue.Options{}),
		expect: controller.NewExpectations(nil)}
	queueService := func(s *corev1.Service) { c.queue.Add(controller.Key(s)) }
	var err error
	c.services, err = informer.For(opts.Informers, informer.Options[*corev1.Service]{
		Name: "services", Shape: informer.Shape{Resource: "services"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Services(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*corev1.Service]{namespaceIndex: informer.ByNamespace[*corev1.Service]},
		Handlers: informer.Handlers[*corev1.Service]{
			OnAdd: queueService, OnUpdate: func(_, s *corev1.Service) { queueService(s) }, OnDelete: queueService,
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
	queueSlice := func(s *discoveryv1.EndpointSlice) {
		if k, ok := serviceOf(s); ok {
			c.queue.Add(k)
		}
	}
	c.slices, err = informer.For(opts.Informers, informer.Options[*discoveryv1.EndpointSlice]{
		Name: "endpointslices", Shape: informer.Shape{Resource: "endpointslices.discovery.k8s.io"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.DiscoveryV1().EndpointSlices(""), nil),
		Indexers: map[string]listwatch.IndexFunc[*discoveryv1.EndpointSlice]{serviceIndex: func(s *discoveryv1.EndpointSlice) ([]string, error) {
			if k, ok := serviceOf(s); ok {
				return []string{k}, nil
			}
			return nil, nil
		}},
		Handlers: informer.Handlers[*discoveryv1.EndpointSlice]{
			OnAdd: func(s *discoveryv1.EndpointSlice) {
				if k, ok := serviceOf(s); ok {
					c.expect.Created(k, "")
				}
				queueSlice(s)
			},
			OnUpdate: func(_, s *discoveryv1.EndpointSlice) { queueSlice(s) },
			OnDelete: func(s *discoveryv1.EndpointSlice) {
				if k, ok := serviceOf(s); ok {
					c.expect.Deleted(k, controller.Key(s))
				}
				queueSlice(s)
			},
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "endpointslice-controller", Queue: c.queue,
		Informers: []controller.Informer{c.services, c.pods, c.slices}, Sync: c.sync}
	return c, nil
}

// serviceOf is the key of the Service whose managed slice s is.
func serviceOf(s *discoveryv1.EndpointSlice) (string, bool) {
	name := s.Labels[discoveryv1.LabelServiceName]
	if name == "" || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy {
		return "", false
	}
	return s.Namespace + "/" + name, true
}

// Run syncs Services until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// podChanged queues the Services selecting the pod before and after.
func (c *Controller) podChanged(old, p *corev1.Pod) {
	all, _ := c.services.Store().ByIndex(namespaceIndex, p.Namespace)
	for _, s := range all {
		if Selects(s, old, p) {
			c.queue.Add(controller.Key(s))
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	svc, ok := c.services.Store().Get(key)
	if !ok || svc.DeletionTimestamp != nil || !Managed(svc) {
		// A deleted Service's slices go with it through their owner
		// reference (the garbage collector); upstream leaves a
		// selector-less Service's slices alone.
		c.expect.Forget(key)
		return nil
	}
	if !c.expect.Satisfied(key) {
		// The slices' events queue the Service again; the expiry bounds
		// the wait if one never comes.
		c.queue.AddAfter(key, c.expect.Expiry(key))
		return nil
	}
	all, _ := c.pods.Store().ByIndex(namespaceIndex, svc.Namespace)
	pods := Selected(svc, all)
	existing, _ := c.slices.Store().ByIndex(serviceIndex, key)
	var owned []*discoveryv1.EndpointSlice
	for _, s := range existing {
		// A slice of an older Service of the same name is not reused: the
		// garbage collector deletes it with that Service.
		if ref := metav1.GetControllerOf(s); ref != nil && ref.UID == svc.UID {
			owned = append(owned, s)
		}
	}
	plan := Reconcile(svc, Desired(svc, pods), owned, c.max)
	if err := Apply(ctx, c.client.DiscoveryV1().EndpointSlices(svc.Namespace), key, fieldManager, plan, c.expect); err != nil {
		return err
	}
	if plan.Changes() > 0 {
		klog.FromContext(ctx).V(4).Info("Synced EndpointSlices", "service", key, "created", len(plan.Create), "updated", len(plan.Update), "deleted", len(plan.Delete))
	}
	return nil
}
