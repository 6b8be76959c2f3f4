// Package rootcacertpublisher keeps the ConfigMap kube-root-ca.crt, whose
// ca.crt is the cluster's CA bundle, in every namespace, as
// kube-controller-manager's root-ca-cert-publisher does: service account
// token volumes project it into pods, so a client in a pod can verify the
// API server. It is made when a namespace appears, made again when
// deleted, and its data put back when changed.
package rootcacertpublisher

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

// Options configure a Controller.
type Options struct {
	// Client reads namespaces and writes ConfigMaps. Required.
	Client kubernetes.Interface
	// RootCA is the PEM bundle to publish: the CA the API server's
	// serving certificate is verified with. Required.
	RootCA []byte
	// Informers shares caches with the other controllers of the process;
	// nil means caches of the controller's own.
	Informers *informer.Factory
}

// Controller publishes the root CA ConfigMaps. Run drives it.
type Controller struct {
	client     kubernetes.Interface
	rootCA     []byte
	loop       *controller.Loop[string]
	queue      *workqueue.Queue[string]
	namespaces *informer.Informer[*v1.Namespace]
	configMaps *informer.Informer[*v1.ConfigMap]
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("root-ca-cert-publisher: Client is required")
	}
	if len(opts.RootCA) == 0 {
		return nil, fmt.Errorf("root-ca-cert-publisher: RootCA is required")
	}
	c := &Controller{client: opts.Client, rootCA: opts.RootCA, queue: workqueue.New[string](workqueue.Options{})}
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
	// Only the one name is cached: every ConfigMap of the cluster would
	// cost memory for nothing (upstream shares the full ConfigMap
	// informer, which other controllers there need).
	queueNamespace := func(cm *v1.ConfigMap) { c.queue.Add(cm.Namespace) }
	c.configMaps, err = informer.For(opts.Informers, informer.Options[*v1.ConfigMap]{
		Name: "root CA configmaps", Shape: informer.Shape{Resource: "configmaps", FieldSelector: fields.OneTermEqualSelector("metadata.name", ConfigMapName).String()},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().ConfigMaps(""), nil),
		Handlers: informer.Handlers[*v1.ConfigMap]{
			OnAdd:    queueNamespace,
			OnUpdate: func(_, cm *v1.ConfigMap) { queueNamespace(cm) },
			OnDelete: queueNamespace,
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: "root-ca-cert-publisher", Queue: c.queue, Informers: []controller.Informer{c.namespaces, c.configMaps}, Sync: c.sync}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once both caches are listed and no namespace is queued
// or being worked on.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// sync brings one namespace's ConfigMap to what Decide says.
func (c *Controller) sync(ctx context.Context, name string) error {
	ns, _ := c.namespaces.Store().Get(name)
	cm, _ := c.configMaps.Store().Get(name + "/" + ConfigMapName)
	action, want := Decide(ns, cm, c.rootCA)
	var err error
	switch action {
	case Nothing:
		return nil
	case Create:
		_, err = c.client.CoreV1().ConfigMaps(name).Create(ctx, want, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	case Update:
		// A conflict (written meanwhile) retries with the newer copy the
		// cache will hold.
		_, err = c.client.CoreV1().ConfigMaps(name).Update(ctx, want, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
	}
	switch {
	case err == nil:
		return nil
	case action == Create && apierrors.IsAlreadyExists(err):
		return nil // made meanwhile: its add event brings the namespace back
	case action == Create && (apierrors.IsNotFound(err) || apierrors.IsForbidden(err)):
		return nil // the namespace went or is going
	}
	return fmt.Errorf("%s configmap %s/%s: %w", action, name, ConfigMapName, err)
}
