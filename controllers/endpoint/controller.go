// Package endpoint fills Services' core/v1 Endpoints from their pods: the
// job of kube-controller-manager's endpoint controller (decide.go says
// what an Endpoints object holds). Services without a selector (the
// `kubernetes` Service among them) and Endpoints another manager labelled
// are left alone.
package endpoint

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/endpointslice"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

const namespaceIndex = informer.NamespaceIndex

// Options configure a Controller.
type Options struct {
	// Client watches Services, pods and Endpoints and writes Endpoints.
	// Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
}

// Controller is the Endpoints controller. Run drives it.
type Controller struct {
	client    kubernetes.Interface
	loop      *controller.Loop[string]
	queue     *workqueue.Queue[string]
	services  *informer.Informer[*corev1.Service]
	pods      *informer.Informer[*corev1.Pod]
	endpoints *informer.Informer[*corev1.Endpoints]
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("endpoint controller: Client is required")
	}
	c := &Controller{client: opts.Client, queue: workqueue.New[string](workqueue.Options{})}
	queue := func(o metav1.Object) { c.queue.Add(controller.Key(o)) }
	var err error
	c.services, err = informer.For(opts.Informers, informer.Options[*corev1.Service]{
		Name: "services", Shape: informer.Shape{Resource: "services"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Services(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*corev1.Service]{namespaceIndex: informer.ByNamespace[*corev1.Service]},
		Handlers: informer.Handlers[*corev1.Service]{
			OnAdd: func(s *corev1.Service) { queue(s) }, OnUpdate: func(_, s *corev1.Service) { queue(s) }, OnDelete: func(s *corev1.Service) { queue(s) },
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
	c.endpoints, err = informer.For(opts.Informers, informer.Options[*corev1.Endpoints]{
		Name: "endpoints", Shape: informer.Shape{Resource: "endpoints"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Endpoints(""), nil),
		Handlers: informer.Handlers[*corev1.Endpoints]{
			// A Service's Endpoints changed or deleted behind the
			// controller's back are put back. Endpoints without a
			// Service are someone's own (a Service without a selector
			// fills them by hand, the conformance Endpoints lifecycle
			// test writes some with no Service at all): upstream's
			// controller only deletes those when their Service goes,
			// so a change to them must not queue them, or the sync
			// below would delete them as a gone Service's.
			OnUpdate: func(_, e *corev1.Endpoints) {
				if _, ok := c.services.Store().Get(controller.Key(e)); ok {
					queue(e)
				}
			},
			OnDelete: func(e *corev1.Endpoints) { queue(e) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "endpoint-controller", Queue: c.queue,
		Informers: []controller.Informer{c.services, c.pods, c.endpoints}, Sync: c.sync}
	return c, nil
}

// Run syncs Services until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// podChanged queues the Services selecting the pod before and after.
func (c *Controller) podChanged(old, p *corev1.Pod) {
	all, _ := c.services.Store().ByIndex(namespaceIndex, p.Namespace)
	for _, s := range all {
		if endpointslice.Selects(s, old, p) {
			c.queue.Add(controller.Key(s))
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	current, _ := c.endpoints.Store().Get(key)
	svc, ok := c.services.Store().Get(key)
	api := c.client.CoreV1().Endpoints
	if !ok {
		// Endpoints have no owner reference: the controller deletes a
		// gone Service's itself, as upstream.
		if current == nil || !Mine(current) {
			return nil
		}
		err := api(current.Namespace).Delete(ctx, current.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &current.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete the Endpoints of deleted Service %s: %w", key, err)
		}
		return nil
	}
	if !endpointslice.Managed(svc) || !Mine(current) {
		return nil
	}
	all, _ := c.pods.Store().ByIndex(namespaceIndex, svc.Namespace)
	pods := endpointslice.Selected(svc, all)
	want := Desired(svc, current, pods)
	if current == nil {
		if _, err := api(svc.Namespace).Create(ctx, want, metav1.CreateOptions{FieldManager: ManagedBy}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create the Endpoints of Service %s: %w", key, err)
		}
		return nil
	}
	if equality.Semantic.DeepEqual(current.Subsets, want.Subsets) && equality.Semantic.DeepEqual(current.Labels, want.Labels) &&
		equality.Semantic.DeepEqual(current.Annotations, want.Annotations) {
		return nil
	}
	if _, err := api(svc.Namespace).Update(ctx, want, metav1.UpdateOptions{FieldManager: ManagedBy}); err != nil {
		return fmt.Errorf("update the Endpoints of Service %s: %w", key, err)
	}
	return nil
}
