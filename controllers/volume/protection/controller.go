// Package protection holds upstream's two storage protection controllers:
// persistentvolumeclaim-protection-controller removes a deleted claim's
// kubernetes.io/pvc-protection finalizer once no pod uses the claim, and
// persistentvolume-protection-controller a deleted volume's
// kubernetes.io/pv-protection once no claim is bound to it. The
// StorageObjectInUseProtection admission adds the finalizers at create.
// ReleaseClaim and ReleaseVolume are the decisions.
package protection

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/volume"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// The controllers' names, kube-controller-manager's.
const (
	ClaimName  = "persistentvolumeclaim-protection-controller"
	VolumeName = "persistentvolume-protection-controller"
)

// Options configure either controller.
type Options struct {
	// Client watches and patches claims (and pods) or volumes. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process.
	Informers *informer.Factory
}

// ClaimController removes claims' protection finalizer. Run drives it.
type ClaimController struct {
	client kubernetes.Interface
	loop   *controller.Loop[string]
	queue  *workqueue.Queue[string]
	claims *informer.Informer[*v1.PersistentVolumeClaim]
	pods   *informer.Informer[*v1.Pod]
}

// NewClaimController returns the PVC protection controller.
func NewClaimController(opts Options) (*ClaimController, error) {
	if opts.Client == nil {
		return nil, errors.New(ClaimName + ": Client is required")
	}
	c := &ClaimController{client: opts.Client, queue: workqueue.New[string](workqueue.Options{})}
	queue := func(pvc *v1.PersistentVolumeClaim) {
		if pvc.DeletionTimestamp != nil && slices.Contains(pvc.Finalizers, PVCFinalizer) {
			c.queue.Add(usersOf(pvc))
		}
	}
	var err error
	c.claims, err = informer.For(opts.Informers, informer.Options[*v1.PersistentVolumeClaim]{
		Name: "persistentvolumeclaims", Shape: informer.Shape{Resource: "persistentvolumeclaims"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().PersistentVolumeClaims(""), nil),
		Handlers:      informer.Handlers[*v1.PersistentVolumeClaim]{OnAdd: queue, OnUpdate: func(_, pvc *v1.PersistentVolumeClaim) { queue(pvc) }},
	})
	if err != nil {
		return nil, err
	}
	// A pod that goes (or is scheduled, or changes) may free its claims.
	podClaims := func(p *v1.Pod) {
		keys, _ := volume.PodClaims(p)
		for _, k := range keys {
			c.queue.Add(k)
		}
	}
	c.pods, err = informer.For(opts.Informers, informer.Options[*v1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*v1.Pod]{volume.PodClaimIndex: volume.PodClaims},
		Handlers: informer.Handlers[*v1.Pod]{
			OnUpdate: func(_, p *v1.Pod) { podClaims(p) },
			OnDelete: podClaims,
		},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: ClaimName, Queue: c.queue, Informers: []controller.Informer{c.claims, c.pods}, Sync: c.sync}
	return c, nil
}

// Run works until ctx ends.
func (c *ClaimController) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *ClaimController) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *ClaimController) sync(ctx context.Context, k string) error {
	claim, ok := c.claims.Store().Get(k)
	if !ok {
		return nil
	}
	pods, _ := c.pods.Store().ByIndex(volume.PodClaimIndex, k)
	if !ReleaseClaim(claim, pods) {
		return nil
	}
	// The cache may not have seen a pod created a moment ago: ask the
	// API, as upstream does before it lets a claim go.
	live, err := c.client.CoreV1().Pods(claim.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods of namespace %s: %w", claim.Namespace, err)
	}
	for i := range live.Items {
		if PodUsesClaim(&live.Items[i], claim) {
			return nil // its events bring the claim back
		}
	}
	clone := claim.DeepCopy()
	clone.Finalizers = withoutFinalizer(clone.Finalizers, PVCFinalizer)
	_, err = c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
	return updated(err, PVCFinalizer, "claim "+k)
}

// VolumeController removes volumes' protection finalizer. Run drives it.
type VolumeController struct {
	client  kubernetes.Interface
	loop    *controller.Loop[string]
	queue   *workqueue.Queue[string]
	volumes *informer.Informer[*v1.PersistentVolume]
}

// NewVolumeController returns the PV protection controller.
func NewVolumeController(opts Options) (*VolumeController, error) {
	if opts.Client == nil {
		return nil, errors.New(VolumeName + ": Client is required")
	}
	c := &VolumeController{client: opts.Client, queue: workqueue.New[string](workqueue.Options{})}
	queue := func(pv *v1.PersistentVolume) {
		if ReleaseVolume(pv) {
			c.queue.Add(pv.Name)
		}
	}
	var err error
	c.volumes, err = informer.For(opts.Informers, informer.Options[*v1.PersistentVolume]{
		Name: "persistentvolumes", Shape: informer.Shape{Resource: "persistentvolumes"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().PersistentVolumes(), nil),
		Handlers:      informer.Handlers[*v1.PersistentVolume]{OnAdd: queue, OnUpdate: func(_, pv *v1.PersistentVolume) { queue(pv) }},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[string]{Name: VolumeName, Queue: c.queue, Informers: []controller.Informer{c.volumes}, Sync: c.sync}
	return c, nil
}

// Run works until ctx ends.
func (c *VolumeController) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the cache is listed and nothing is queued.
func (c *VolumeController) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

func (c *VolumeController) sync(ctx context.Context, name string) error {
	pv, ok := c.volumes.Store().Get(name)
	if !ok || !ReleaseVolume(pv) {
		return nil
	}
	clone := pv.DeepCopy()
	clone.Finalizers = withoutFinalizer(clone.Finalizers, PVFinalizer)
	_, err := c.client.CoreV1().PersistentVolumes().Update(ctx, clone, metav1.UpdateOptions{})
	return updated(err, PVFinalizer, "volume "+name)
}

// withoutFinalizer is finalizers without finalizer. The controllers take
// it off with an update of their cached copy, as upstream's do: their
// roles (system:controller:pvc-protection-controller,
// pv-protection-controller) grant update, not patch, and the copy's
// resourceVersion makes an object changed meanwhile a conflict, never the
// removal of another finalizer.
func withoutFinalizer(finalizers []string, finalizer string) []string {
	return slices.DeleteFunc(finalizers, func(f string) bool { return f == finalizer })
}

// updated is the update's error named; nil when the object is gone, or
// changed meanwhile (its event brings it back).
func updated(err error, finalizer, what string) error {
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("remove finalizer %s from %s: %w", finalizer, what, err)
	}
	return nil
}
