// Package localpath is Kite's built-in local provisioner, as k3s ships
// rancher's local-path-provisioner: it provisions the claims of classes
// whose provisioner is kite.io/local-path (the default class local-path)
// as directories on one node. It acts as an external provisioner does:
// the binder hands a claim over (volume.kubernetes.io/storage-provisioner),
// the scheduler picks the node of a WaitForFirstConsumer claim
// (volume.kubernetes.io/selected-node), and this controller creates a
// hostPath PersistentVolume under that node's local-path directory
// (the Node's kite.io/local-path-dir annotation, set by its agent),
// pinned to the node and pre-bound to the claim; the binder binds them.
// A released volume of the Delete policy is deleted here; its directory
// is made and removed by the node's agent, which alone can reach the
// node's disk (docs/storage.md).
package localpath

import (
	"context"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// Name is the controller's name.
const Name = "local-path-provisioner"

// Options configure a Controller.
type Options struct {
	// Client watches claims, volumes, classes and nodes and writes
	// volumes. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process.
	Informers *informer.Factory
}

// Controller is the runner. Run drives it.
type Controller struct {
	client   kubernetes.Interface
	loop     *controller.Loop[string]
	queue    *workqueue.Queue[string]
	claims   *informer.Informer[*v1.PersistentVolumeClaim]
	volumes  *informer.Informer[*v1.PersistentVolume]
	classes  *informer.Informer[*storagev1.StorageClass]
	nodes    *informer.Informer[*v1.Node]
	recorder *events.Recorder
}

// Keys are "claim/<namespace>/<name>" or "volume/<name>".
const (
	claimPrefix  = "claim/"
	volumePrefix = "volume/"
)

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New(Name + ": Client is required")
	}
	c := &Controller{client: opts.Client, queue: workqueue.New[string](workqueue.Options{}),
		recorder: events.New(events.Options{Client: opts.Client, Component: Name})}
	claimKey := func(pvc *v1.PersistentVolumeClaim) { c.queue.Add(claimPrefix + pvc.Namespace + "/" + pvc.Name) }
	var err error
	c.claims, err = informer.For(opts.Informers, informer.Options[*v1.PersistentVolumeClaim]{
		Name: "persistentvolumeclaims", Shape: informer.Shape{Resource: "persistentvolumeclaims"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().PersistentVolumeClaims(""), nil),
		Handlers:      informer.Handlers[*v1.PersistentVolumeClaim]{OnAdd: claimKey, OnUpdate: func(_, pvc *v1.PersistentVolumeClaim) { claimKey(pvc) }},
	})
	if err != nil {
		return nil, err
	}
	volumeKey := func(pv *v1.PersistentVolume) { c.queue.Add(volumePrefix + pv.Name) }
	c.volumes, err = informer.For(opts.Informers, informer.Options[*v1.PersistentVolume]{
		Name: "persistentvolumes", Shape: informer.Shape{Resource: "persistentvolumes"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().PersistentVolumes(), nil),
		Handlers:      informer.Handlers[*v1.PersistentVolume]{OnAdd: volumeKey, OnUpdate: func(_, pv *v1.PersistentVolume) { volumeKey(pv) }},
	})
	if err != nil {
		return nil, err
	}
	c.classes, err = informer.For(opts.Informers, informer.Options[*storagev1.StorageClass]{
		Name: "storageclasses", Shape: informer.Shape{Resource: "storageclasses.storage.k8s.io"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.StorageV1().StorageClasses(), nil),
	})
	if err != nil {
		return nil, err
	}
	c.nodes, err = informer.For(opts.Informers, informer.Options[*v1.Node]{
		Name: "nodes", Shape: informer.Shape{Resource: "nodes"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Nodes(), nil),
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: Name, Queue: c.queue, Recorder: c.recorder,
		Informers: []controller.Informer{c.claims, c.volumes, c.classes, c.nodes}, Sync: c.sync}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *Controller) sync(ctx context.Context, k string) error {
	if name, ok := strings.CutPrefix(k, volumePrefix); ok {
		pv, ok := c.volumes.Store().Get(name)
		if !ok || !Deletes(pv) {
			return nil
		}
		// Preconditioned on the uid: a volume made again under the
		// name is not this one.
		err := c.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete volume %s: %w", pv.Name, err)
		}
		return nil
	}
	claim, ok := c.claims.Store().Get(strings.TrimPrefix(k, claimPrefix))
	if !ok {
		return nil
	}
	var class *storagev1.StorageClass
	if claim.Spec.StorageClassName != nil {
		class, _ = c.classes.Store().Get(*claim.Spec.StorageClassName)
	}
	if !Wants(claim, class) {
		return nil
	}
	name := VolumeName(claim)
	if _, ok := c.volumes.Store().Get(name); ok {
		return nil // made before: the binder binds it
	}
	failed := func(err error) error {
		c.recorder.Event(claim, "PersistentVolumeClaim", v1.EventTypeWarning, "ProvisioningFailed",
			fmt.Sprintf("failed to provision volume with StorageClass %q: %v", class.Name, err))
		return fmt.Errorf("provision claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	node, err := Node(claim, c.nodes.Store().List())
	if err != nil {
		return failed(err)
	}
	pv, err := Volume(claim, class, node)
	if err != nil {
		return failed(err)
	}
	c.recorder.Event(claim, "PersistentVolumeClaim", v1.EventTypeNormal, "Provisioning",
		fmt.Sprintf("External provisioner is provisioning volume for claim %q", claim.Namespace+"/"+claim.Name))
	if _, err := c.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return failed(err)
	}
	c.recorder.Event(claim, "PersistentVolumeClaim", v1.EventTypeNormal, "ProvisioningSucceeded",
		fmt.Sprintf("Successfully provisioned volume %s", name))
	return nil
}
