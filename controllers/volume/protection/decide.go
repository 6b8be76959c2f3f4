package protection

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// The finalizers, upstream's (pkg/util/... volumeutil): the
// StorageObjectInUseProtection admission adds them at create.
const (
	PVCFinalizer = "kubernetes.io/pvc-protection"
	PVFinalizer  = "kubernetes.io/pv-protection"
)

// PodUsesClaim is upstream's podUsesPVCForDeletion: a scheduled pod that
// names the claim in a persistentVolumeClaim volume uses it until the pod
// object is gone (the agent may still have it mounted); a generic
// ephemeral volume's claim is used until its pod is shut down (deleted
// with grace 0, or force-deleted).
func PodUsesClaim(pod *v1.Pod, claim *v1.PersistentVolumeClaim) bool {
	if pod.Spec.NodeName == "" || pod.Namespace != claim.Namespace {
		return false
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		switch {
		case vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == claim.Name:
			return true
		case vol.Ephemeral != nil && pod.Name+"-"+vol.Name == claim.Name && !shutDown(pod) && ownedBy(claim, pod):
			return true
		}
	}
	return false
}

func shutDown(pod *v1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

// ownedBy says whether the claim is the pod's ephemeral one (its
// controller is the pod).
func ownedBy(claim *v1.PersistentVolumeClaim, pod *v1.Pod) bool {
	for _, ref := range claim.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && ref.UID == pod.UID {
			return true
		}
	}
	return false
}

// ReleaseClaim says whether the claim's protection finalizer goes: it is
// being deleted and no pod uses it.
func ReleaseClaim(claim *v1.PersistentVolumeClaim, pods []*v1.Pod) bool {
	if claim.DeletionTimestamp == nil || !slices.Contains(claim.Finalizers, PVCFinalizer) {
		return false
	}
	for _, p := range pods {
		if PodUsesClaim(p, claim) {
			return false
		}
	}
	return true
}

// ReleaseVolume says whether the volume's protection finalizer goes: it
// is being deleted and not Bound (upstream's isBeingUsed reads the phase
// the binder keeps).
func ReleaseVolume(pv *v1.PersistentVolume) bool {
	return pv.DeletionTimestamp != nil && slices.Contains(pv.Finalizers, PVFinalizer) && pv.Status.Phase != v1.VolumeBound
}

// usersOf is the index key of a claim's users.
func usersOf(claim *v1.PersistentVolumeClaim) string { return claim.Namespace + "/" + claim.Name }
