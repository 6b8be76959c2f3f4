package defaults

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// PersistentVolume is upstream's SetObjectDefaults_PersistentVolume for the
// sources Kite mounts or stores: phase Pending, reclaim policy Retain,
// volume mode Filesystem, capacity in canonical form, hostPath's type.
func PersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	resourceList(pv.Spec.Capacity)
	if hp := pv.Spec.HostPath; hp != nil && hp.Type == nil {
		hp.Type = ptr.To(corev1.HostPathUnset)
	}
}

// PersistentVolumeClaim is upstream's SetObjectDefaults_PersistentVolumeClaim:
// phase Pending, volume mode Filesystem, quantities in canonical form. A
// StatefulSet's volumeClaimTemplates get the same.
func PersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
	if pvc.Spec.VolumeMode == nil {
		pvc.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	resourceList(pvc.Spec.Resources.Limits)
	resourceList(pvc.Spec.Resources.Requests)
	resourceList(pvc.Status.Capacity)
	resourceList(pvc.Status.AllocatedResources)
}
