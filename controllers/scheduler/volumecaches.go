package scheduler

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/listwatch"
)

// annSelectedNode is the annotation that asks a claim's provisioner for a
// volume on the node (upstream's volume.kubernetes.io/selected-node).
const annSelectedNode = "volume.kubernetes.io/selected-node"

// volumeCaches are the claims, volumes and classes the volume filter
// reads (VolumeBinding's listers).
type volumeCaches struct {
	claims  *informer.Informer[*v1.PersistentVolumeClaim]
	volumes *informer.Informer[*v1.PersistentVolume]
	classes *informer.Informer[*storagev1.StorageClass]
}

// newVolumeCaches asks for the caches; a change of a claim, volume or
// class may make an unschedulable pod fit, and a volume the cache shows
// bound is no longer only assumed.
func newVolumeCaches(opts Options, s *Scheduler) (*volumeCaches, error) {
	retry := func() { s.retryUnschedulable(false) }
	vc := &volumeCaches{}
	var err error
	vc.claims, err = informer.For(opts.Informers, informer.Options[*v1.PersistentVolumeClaim]{
		Name: "persistentvolumeclaims", Shape: informer.Shape{Resource: "persistentvolumeclaims"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().PersistentVolumeClaims(""), nil),
		Handlers: informer.Handlers[*v1.PersistentVolumeClaim]{
			OnAdd: func(*v1.PersistentVolumeClaim) { retry() }, OnUpdate: func(_, _ *v1.PersistentVolumeClaim) { retry() },
		},
	})
	if err != nil {
		return nil, err
	}
	volumeSeen := func(pv *v1.PersistentVolume) {
		if pv.Spec.ClaimRef != nil {
			s.mu.Lock()
			if a := s.assumedVolumes[pv.Name]; a != nil && a.Spec.ClaimRef != nil && a.Spec.ClaimRef.UID == pv.Spec.ClaimRef.UID {
				delete(s.assumedVolumes, pv.Name)
			}
			s.mu.Unlock()
		}
		retry()
	}
	vc.volumes, err = informer.For(opts.Informers, informer.Options[*v1.PersistentVolume]{
		Name: "persistentvolumes", Shape: informer.Shape{Resource: "persistentvolumes"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.CoreV1().PersistentVolumes(), nil),
		Handlers: informer.Handlers[*v1.PersistentVolume]{OnAdd: volumeSeen, OnUpdate: func(_, pv *v1.PersistentVolume) { volumeSeen(pv) },
			OnDelete: func(pv *v1.PersistentVolume) {
				s.mu.Lock()
				delete(s.assumedVolumes, pv.Name)
				s.mu.Unlock()
			}},
	})
	if err != nil {
		return nil, err
	}
	vc.classes, err = informer.For(opts.Informers, informer.Options[*storagev1.StorageClass]{
		Name: "storageclasses", Shape: informer.Shape{Resource: "storageclasses.storage.k8s.io"},
		ListerWatcher: listwatch.FromTypedClient(opts.Client.StorageV1().StorageClasses(), nil),
		Handlers: informer.Handlers[*storagev1.StorageClass]{
			OnAdd: func(*storagev1.StorageClass) { retry() }, OnUpdate: func(_, _ *storagev1.StorageClass) { retry() },
		},
	})
	if err != nil {
		return nil, err
	}
	return vc, nil
}

func (vc *volumeCaches) informers() []controller.Informer {
	return []controller.Informer{vc.claims, vc.volumes, vc.classes}
}

func (vc *volumeCaches) synced() bool {
	return vc.claims.HasSynced() && vc.volumes.HasSynced() && vc.classes.HasSynced()
}

// view is what the volume filter reads for pod, nil when the pod uses no
// claim (the filter is skipped, at no cost). assumed is read under the
// scheduler's lock by the caller.
func (vc *volumeCaches) view(pod *v1.Pod, assumed map[string]*v1.PersistentVolume) *Volumes {
	uses := false
	for i := range pod.Spec.Volumes {
		uses = uses || pod.Spec.Volumes[i].PersistentVolumeClaim != nil || pod.Spec.Volumes[i].Ephemeral != nil
	}
	if !uses {
		return nil
	}
	return &Volumes{
		Claim: func(ns, name string) (*v1.PersistentVolumeClaim, bool) {
			return vc.claims.Store().Get(ns + "/" + name)
		},
		Volumes: vc.volumes.Store().List(),
		Class:   func(name string) (*storagev1.StorageClass, bool) { return vc.classes.Store().Get(name) },
		Assumed: assumed,
	}
}

// assumeVolumesLocked keeps the pod's plan for its binder and counts the
// volumes it takes as taken until the cache shows them bound.
func (s *Scheduler) assumeVolumesLocked(k string, plan *VolumePlan) {
	if plan == nil || len(plan.Bind)+len(plan.Provision) == 0 {
		return
	}
	s.plans[k] = plan
	for _, pv := range plan.Bind {
		s.assumedVolumes[pv.Name] = pv
	}
}

// forgetPlan drops the pod's plan. After a binding its volumes stay
// assumed until the cache shows them bound; after a failure they are
// free for the next decision (a volume whose claimRef was written stays
// pre-bound to the claim, which takes it again).
func (s *Scheduler) forgetPlan(k string, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if plan := s.plans[k]; plan != nil {
		delete(s.plans, k)
		for _, pv := range plan.Bind {
			if !failed {
				break
			}
			if s.assumedVolumes[pv.Name] == pv {
				delete(s.assumedVolumes, pv.Name)
			}
		}
	}
}

// carryOut is VolumeBinding's PreBind, simplified: the volumes chosen
// for the pod's waiting claims get their claimRef (the binder completes
// the binding) and the claims to provision get the node
// (volume.kubernetes.io/selected-node; their provisioner makes the
// volume there). The pod is bound at once: its agent waits until every
// claim is Bound before it starts the pod, where upstream's PreBind
// waits before the binding.
func (s *Scheduler) carryOut(ctx context.Context, pod *v1.Pod) error {
	s.mu.Lock()
	plan := s.plans[key(pod)]
	s.mu.Unlock()
	if plan == nil {
		return nil
	}
	for _, pv := range plan.Bind {
		if _, err := s.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("bind volume %s to claim %s/%s: %w", pv.Name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, err)
		}
	}
	for _, claim := range plan.Provision {
		if claim.Annotations[annSelectedNode] == pod.Spec.NodeName {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{annSelectedNode: pod.Spec.NodeName},
			// The claim as decided on, or a conflict.
			"resourceVersion": claim.ResourceVersion,
		}})
		if err != nil {
			return err
		}
		if _, err := s.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("select node %s for claim %s/%s: %w", pod.Spec.NodeName, claim.Namespace, claim.Name, err)
		}
	}
	return nil
}
