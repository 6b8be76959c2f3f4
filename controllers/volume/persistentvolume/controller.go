// Package persistentvolume is the PersistentVolume binder, upstream's
// persistentvolume-binder-controller (pkg/controller/volume/persistentvolume):
// it binds claims to volumes (statically: the smallest Available volume
// that fits a claim's capacity, access modes, class, volumeMode and
// selector, or the one either names), keeps both objects' phases
// (Pending/Bound/Lost, Available/Bound/Released/Failed) with upstream's
// annotations and events, hands claims without a volume to their class's
// provisioner (volume.kubernetes.io/storage-provisioner), leaving claims
// of WaitForFirstConsumer classes to the scheduler until it picks a node,
// and reclaims released volumes by their policy.
//
// DecideClaim and DecideVolume are the decisions; Controller is the
// runner: it watches claims, volumes, classes and pods, and writes
// through the API. docs/storage.md says how the parts fit.
package persistentvolume

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	helpers "k8s.io/component-helpers/storage/volume"

	storagedefaults "github.com/kite-project/kite/apis/storage/defaults"
	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/volume"
	"github.com/kite-project/kite/controllers/workqueue"
	"github.com/kite-project/kite/listwatch"
)

// Name is the controller's name, kube-controller-manager's.
const Name = "persistentvolume-binder-controller"

// resyncPeriod is upstream's --pvclaimbinder-sync-period: every claim and
// volume is looked at again this often, so that what no event announces
// (a volume that became big enough by an edit) is seen.
const resyncPeriod = 15 * time.Second

// Options configure a Controller.
type Options struct {
	// Client watches and writes claims and volumes. Required.
	Client kubernetes.Interface
	// Informers shares caches with the other controllers of the process.
	Informers *informer.Factory
}

// key is a claim ("namespace/name") or a volume ("name").
type key struct {
	volume bool
	name   string
}

// Controller is the runner. Run drives it.
type Controller struct {
	client   kubernetes.Interface
	loop     *controller.Loop[key]
	queue    *workqueue.Queue[key]
	claims   *informer.Informer[*v1.PersistentVolumeClaim]
	volumes  *informer.Informer[*v1.PersistentVolume]
	classes  *informer.Informer[*storagev1.StorageClass]
	pods     *informer.Informer[*v1.Pod]
	recorder *events.Recorder
}

// New returns a Controller.
func New(opts Options) (*Controller, error) {
	if opts.Client == nil {
		return nil, errors.New(Name + ": Client is required")
	}
	c := &Controller{client: opts.Client, queue: workqueue.New[key](workqueue.Options{}),
		recorder: events.New(events.Options{Client: opts.Client, Component: "persistentvolume-controller"})}
	claimKey := func(pvc *v1.PersistentVolumeClaim) { c.queue.Add(key{name: pvc.Namespace + "/" + pvc.Name}) }
	var err error
	c.claims, err = informer.For(opts.Informers, informer.Options[*v1.PersistentVolumeClaim]{
		Name: "persistentvolumeclaims", Shape: informer.Shape{Resource: "persistentvolumeclaims"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().PersistentVolumeClaims(""), nil),
		Handlers: informer.Handlers[*v1.PersistentVolumeClaim]{
			OnAdd:    claimKey,
			OnUpdate: func(_, pvc *v1.PersistentVolumeClaim) { claimKey(pvc) },
			// A deleted claim releases its volume.
			OnDelete: func(pvc *v1.PersistentVolumeClaim) {
				if pvc.Spec.VolumeName != "" {
					c.queue.Add(key{volume: true, name: pvc.Spec.VolumeName})
				}
			},
		},
	})
	if err != nil {
		return nil, err
	}
	volumeChanged := func(pv *v1.PersistentVolume) {
		c.queue.Add(key{volume: true, name: pv.Name})
		if ref := pv.Spec.ClaimRef; ref != nil {
			c.queue.Add(key{name: ref.Namespace + "/" + ref.Name})
		} else {
			// A volume free to bind: the pending claims may take it
			// (upstream waits for its periodic resync).
			c.queuePending()
		}
	}
	c.volumes, err = informer.For(opts.Informers, informer.Options[*v1.PersistentVolume]{
		Name: "persistentvolumes", Shape: informer.Shape{Resource: "persistentvolumes"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().PersistentVolumes(), nil),
		Handlers: informer.Handlers[*v1.PersistentVolume]{
			OnAdd:    volumeChanged,
			OnUpdate: func(_, pv *v1.PersistentVolume) { volumeChanged(pv) },
			OnDelete: func(pv *v1.PersistentVolume) {
				if ref := pv.Spec.ClaimRef; ref != nil {
					c.queue.Add(key{name: ref.Namespace + "/" + ref.Name})
				}
			},
		},
	})
	if err != nil {
		return nil, err
	}
	c.classes, err = informer.For(opts.Informers, informer.Options[*storagev1.StorageClass]{
		Name: "storageclasses", Shape: informer.Shape{Resource: "storageclasses.storage.k8s.io"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.StorageV1().StorageClasses(), nil),
		Handlers: informer.Handlers[*storagev1.StorageClass]{
			OnAdd:    func(*storagev1.StorageClass) { c.queuePending() },
			OnUpdate: func(_, _ *storagev1.StorageClass) { c.queuePending() },
		},
	})
	if err != nil {
		return nil, err
	}
	c.pods, err = informer.For(opts.Informers, informer.Options[*v1.Pod]{
		Name: "pods", Shape: informer.Shape{Resource: "pods"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().Pods(""), nil),
		Indexers:      map[string]listwatch.IndexFunc[*v1.Pod]{volume.PodClaimIndex: volume.PodClaims},
	})
	if err != nil {
		return nil, err
	}
	c.loop = &controller.Loop[key]{Name: Name, Queue: c.queue, Recorder: c.recorder,
		Informers:  []controller.Informer{c.claims, c.volumes, c.classes, c.pods},
		Background: []func(context.Context){c.resync}, Sync: c.sync}
	return c, nil
}

// Run works until ctx ends.
func (c *Controller) Run(ctx context.Context) { c.loop.Run(ctx) }

// WaitIdle returns once the caches are listed and nothing is queued.
func (c *Controller) WaitIdle(ctx context.Context) error { return c.loop.WaitIdle(ctx) }

// queuePending queues every claim not bound yet.
func (c *Controller) queuePending() {
	for _, pvc := range c.claims.Store().List() {
		if pvc.Status.Phase == v1.ClaimPending {
			c.queue.Add(key{name: pvc.Namespace + "/" + pvc.Name})
		}
	}
}

func (c *Controller) resync(ctx context.Context) {
	t := time.NewTicker(resyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, pvc := range c.claims.Store().List() {
				c.queue.Add(key{name: pvc.Namespace + "/" + pvc.Name})
			}
			for _, pv := range c.volumes.Store().List() {
				c.queue.Add(key{volume: true, name: pv.Name})
			}
		}
	}
}

func (c *Controller) sync(ctx context.Context, k key) error {
	if k.volume {
		pv, ok := c.volumes.Store().Get(k.name)
		if !ok {
			return nil
		}
		return c.syncVolume(ctx, pv)
	}
	pvc, ok := c.claims.Store().Get(k.name)
	if !ok {
		return nil
	}
	return c.syncClaim(ctx, pvc)
}

func (c *Controller) syncClaim(ctx context.Context, pvc *v1.PersistentVolumeClaim) error {
	in := ClaimInputs{Volumes: c.volumes.Store().List()}
	classes := c.classes.Store().List()
	for _, sc := range classes {
		if sc.Name == volume.ClaimClass(pvc) {
			in.Class = sc
		}
	}
	in.DefaultClass = storagedefaults.DefaultClass(classes)
	pods, _ := c.pods.Store().ByIndex(volume.PodClaimIndex, pvc.Namespace+"/"+pvc.Name)
	for _, p := range pods {
		if p.Spec.NodeName == "" && !volume.Terminated(p) {
			in.UnscheduledPods = append(in.UnscheduledPods, p.Name)
		}
	}
	sort.Strings(in.UnscheduledPods)
	d := DecideClaim(pvc, in)
	if d.Event != nil {
		c.recorder.Event(pvc, "PersistentVolumeClaim", d.Event.Type, d.Event.Reason, d.Event.Message)
	}
	if d.Err != nil {
		return d.Err
	}
	var err error
	switch d.Step {
	case ClaimPhase:
		_, err = c.claimStatus(ctx, pvc, d.Phase, nil)
	case ClaimBind:
		err = c.bind(ctx, d.Volume, pvc)
	case ClaimSetClass:
		clone := pvc.DeepCopy()
		clone.Spec.StorageClassName = &d.Class
		_, err = c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
	case ClaimProvision:
		if pvc.Annotations[volume.AnnStorageProvisioner] != d.Provisioner || pvc.Annotations[volume.AnnBetaStorageProvisioner] != d.Provisioner {
			clone := pvc.DeepCopy()
			metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volume.AnnStorageProvisioner, d.Provisioner)
			metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volume.AnnBetaStorageProvisioner, d.Provisioner)
			_, err = c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
		}
	}
	return ignoreGone(err, "claim", pvc.Namespace+"/"+pvc.Name)
}

// bind is upstream's bind: the volume to the claim, the volume Bound, the
// claim to the volume, the claim Bound; each write only when it changes
// something, so that a retry after a conflict picks up where it stopped.
func (c *Controller) bind(ctx context.Context, pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim) error {
	clone, dirty, err := helpers.GetBindVolumeToClaim(pv, pvc)
	if err != nil {
		return err
	}
	pvs := c.client.CoreV1().PersistentVolumes()
	if dirty {
		if pv, err = pvs.Update(ctx, clone, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("bind volume %s to claim %s/%s: %w", clone.Name, pvc.Namespace, pvc.Name, err)
		}
	}
	if pv.Status.Phase != v1.VolumeBound {
		clone := pv.DeepCopy()
		clone.Status.Phase, clone.Status.Message = v1.VolumeBound, ""
		if pv, err = pvs.UpdateStatus(ctx, clone, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("volume %s Bound: %w", clone.Name, err)
		}
	}
	claims := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace)
	if pvc.Spec.VolumeName != pv.Name || !metav1.HasAnnotation(pvc.ObjectMeta, volume.AnnBindCompleted) {
		clone := pvc.DeepCopy()
		if clone.Spec.VolumeName != pv.Name {
			clone.Spec.VolumeName = pv.Name
			if !metav1.HasAnnotation(clone.ObjectMeta, volume.AnnBoundByController) {
				metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volume.AnnBoundByController, "yes")
			}
		}
		metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volume.AnnBindCompleted, "yes")
		if pvc, err = claims.Update(ctx, clone, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("bind claim %s/%s to volume %s: %w", clone.Namespace, clone.Name, pv.Name, err)
		}
	}
	_, err = c.claimStatus(ctx, pvc, v1.ClaimBound, pv)
	return err
}

// claimStatus is upstream's updateClaimStatus: the phase, and the access
// modes and capacity of the volume (none without).
func (c *Controller) claimStatus(ctx context.Context, pvc *v1.PersistentVolumeClaim, phase v1.PersistentVolumeClaimPhase, pv *v1.PersistentVolume) (*v1.PersistentVolumeClaim, error) {
	clone := pvc.DeepCopy()
	clone.Status.Phase = phase
	if pv == nil {
		clone.Status.AccessModes, clone.Status.Capacity, clone.Status.CurrentVolumeAttributesClassName = nil, nil, nil
	} else {
		clone.Status.AccessModes = pv.Spec.AccessModes
		if pvc.Status.Phase != phase {
			clone.Status.Capacity = pv.Spec.Capacity
			clone.Status.CurrentVolumeAttributesClassName = pv.Spec.VolumeAttributesClassName
		}
	}
	if equalClaimStatus(pvc.Status, clone.Status) {
		return pvc, nil
	}
	out, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s %s: %w", pvc.Namespace, pvc.Name, phase, err)
	}
	return out, nil
}

func equalClaimStatus(a, b v1.PersistentVolumeClaimStatus) bool {
	if a.Phase != b.Phase || len(a.AccessModes) != len(b.AccessModes) || len(a.Capacity) != len(b.Capacity) {
		return false
	}
	for i := range a.AccessModes {
		if a.AccessModes[i] != b.AccessModes[i] {
			return false
		}
	}
	for k, q := range a.Capacity {
		if o, ok := b.Capacity[k]; !ok || o.Cmp(q) != 0 {
			return false
		}
	}
	return (a.CurrentVolumeAttributesClassName == nil) == (b.CurrentVolumeAttributesClassName == nil)
}

func (c *Controller) syncVolume(ctx context.Context, pv *v1.PersistentVolume) error {
	claim, err := c.claimOf(ctx, pv)
	if err != nil {
		return err
	}
	d := DecideVolume(pv, claim)
	if d.Event != nil {
		c.recorder.Event(pv, "PersistentVolume", d.Event.Type, d.Event.Reason, d.Event.Message)
	}
	if d.ClaimEvent != nil && claim != nil {
		c.recorder.Event(claim, "PersistentVolumeClaim", d.ClaimEvent.Type, d.ClaimEvent.Reason, d.ClaimEvent.Message)
	}
	pvs := c.client.CoreV1().PersistentVolumes()
	switch d.Step {
	case VolumePhase:
		clone := pv.DeepCopy()
		clone.Status.Phase, clone.Status.Message = d.Phase, d.Message
		_, err = pvs.UpdateStatus(ctx, clone, metav1.UpdateOptions{})
	case VolumeUnbind:
		clone := pv.DeepCopy()
		if metav1.HasAnnotation(pv.ObjectMeta, volume.AnnBoundByController) {
			clone.Spec.ClaimRef = nil
			delete(clone.Annotations, volume.AnnBoundByController)
		} else {
			clone.Spec.ClaimRef.UID = ""
		}
		if clone, err = pvs.Update(ctx, clone, metav1.UpdateOptions{}); err == nil && clone.Status.Phase != v1.VolumeAvailable {
			clone.Status.Phase, clone.Status.Message = v1.VolumeAvailable, ""
			_, err = pvs.UpdateStatus(ctx, clone, metav1.UpdateOptions{})
		}
	case VolumeSyncClaim:
		c.queue.Add(key{name: claim.Namespace + "/" + claim.Name})
	}
	return ignoreGone(err, "volume", pv.Name)
}

// claimOf is the claim the volume's claimRef names, with its uid; nil
// when gone or replaced. A claim the cache does not have is read from the
// API unless the volume is released already, as upstream's, so that a
// claim created a moment ago does not release its volume.
func (c *Controller) claimOf(ctx context.Context, pv *v1.PersistentVolume) (*v1.PersistentVolumeClaim, error) {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		return nil, nil
	}
	claim, ok := c.claims.Store().Get(ref.Namespace + "/" + ref.Name)
	if (!ok || claim.UID != ref.UID) && pv.Status.Phase != v1.VolumeReleased && pv.Status.Phase != v1.VolumeFailed {
		live, err := c.client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("read claim %s/%s of volume %s: %w", ref.Namespace, ref.Name, pv.Name, err)
		}
		claim, ok = live, true
	}
	if !ok || claim.UID != ref.UID {
		return nil, nil
	}
	return claim, nil
}

// ignoreGone is err named, or nil when the object went meanwhile (its
// delete event brings what depends on it).
func ignoreGone(err error, kind, name string) error {
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("%s %s: %w", kind, name, err)
}
