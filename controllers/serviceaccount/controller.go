// Package serviceaccount gives every namespace its "default" service
// account, as kube-controller-manager's service account controller does:
// pods name it when they name none, and users expect to see it. A deleted
// default account is made again.
package serviceaccount

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// DefaultName is the service account every namespace gets.
const DefaultName = "default"

// Options configure a Controller.
type Options struct {
	// Client reads namespaces and creates service accounts. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
}

// Controller creates missing default service accounts. Run drives it.
type Controller struct {
	client     kubernetes.Interface
	loop       *controller.Loop[string]
	queue      *workqueue.Queue[string]
	namespaces *informer.Informer[*v1.Namespace]
	accounts   *informer.Informer[*v1.ServiceAccount]
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("serviceaccount controller: Client is required")
	}
	c := &Controller{client: opts.Client, queue: workqueue.New[string](workqueue.Options{})}
	var err error
	c.namespaces, err = informer.For(opts.Informers, informer.Options[*v1.Namespace]{
		Name: "namespaces", Shape: informer.Shape{Resource: "namespaces"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Namespaces(), nil),
		Handlers: informer.Handlers[*v1.Namespace]{
			OnAdd:    func(ns *v1.Namespace) { c.queue.Add(ns.Name) },
			OnUpdate: func(_, ns *v1.Namespace) { c.queue.Add(ns.Name) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.accounts, err = informer.For(opts.Informers, informer.Options[*v1.ServiceAccount]{
		Name: "default serviceaccounts", Shape: informer.Shape{Resource: "serviceaccounts", FieldSelector: fields.OneTermEqualSelector("metadata.name", DefaultName).String()},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().ServiceAccounts(""), nil),
		Handlers: informer.Handlers[*v1.ServiceAccount]{
			OnDelete: func(sa *v1.ServiceAccount) { c.queue.Add(sa.Namespace) },
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "serviceaccount-controller", Queue: c.queue, Informers: []controller.Informer{c.namespaces, c.accounts}, Sync: c.ensure}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once both caches are listed and no namespace is queued
// or being worked on.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// ensure creates the default account of an active namespace.
func (c *Controller) ensure(ctx context.Context, name string) error {
	ns, ok := c.namespaces.Store().Get(name)
	if !ok || ns.DeletionTimestamp != nil || ns.Status.Phase == v1.NamespaceTerminating {
		return nil
	}
	if _, ok := c.accounts.Store().Get(name + "/" + DefaultName); ok {
		return nil
	}
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: name}}
	_, err := c.client.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return nil // the namespace went or is going
	}
	return fmt.Errorf("create service account %s/%s: %w", name, DefaultName, err)
}
