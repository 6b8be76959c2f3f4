// Package volume holds what the storage controllers share: the pod index
// by the claims a pod uses, upstream's annotation and event names, and
// the lookups over the caches (docs/storage.md). The controllers are its
// packages: persistentvolume (the binder), localpath (the built-in
// provisioner) and protection (the PVC and PV protection finalizers).
package volume

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Upstream's annotations (k8s.io/component-helpers/storage/volume).
const (
	AnnBindCompleted          = "pv.kubernetes.io/bind-completed"
	AnnBoundByController      = "pv.kubernetes.io/bound-by-controller"
	AnnSelectedNode           = "volume.kubernetes.io/selected-node"
	AnnDynamicallyProvisioned = "pv.kubernetes.io/provisioned-by"
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// NotSupportedProvisioner is the provisioner of classes that cannot
	// provision: their claims bind to existing volumes only.
	NotSupportedProvisioner = "kubernetes.io/no-provisioner"
)

// Upstream's event reasons (pkg/controller/volume/events).
const (
	EventFailedBinding         = "FailedBinding"
	EventVolumeMismatch        = "VolumeMismatch"
	EventVolumeFailedRecycle   = "VolumeFailedRecycle"
	EventVolumeFailedDelete    = "VolumeFailedDelete"
	EventExternalProvisioning  = "ExternalProvisioning"
	EventProvisioningFailed    = "ProvisioningFailed"
	EventProvisioningSucceeded = "ProvisioningSucceeded"
	EventProvisioning          = "Provisioning"
	EventWaitForFirstConsumer  = "WaitForFirstConsumer"
	EventWaitForPodScheduled   = "WaitForPodScheduled"
)

// PodClaimIndex indexes pods by the claims they use, "<namespace>/<claim>"
// (generic ephemeral volumes' claims, <pod>-<volume>, included), as
// upstream's PodPVCIndex.
const PodClaimIndex = "kite.io/pod-claims"

// PodClaims is the PodClaimIndex function.
func PodClaims(p *v1.Pod) ([]string, error) {
	var out []string
	for _, name := range ClaimNames(p) {
		out = append(out, p.Namespace+"/"+name)
	}
	return out, nil
}

// ClaimNames are the names of the claims pod's volumes use.
func ClaimNames(p *v1.Pod) []string {
	var out []string
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, p.Name+"-"+v.Name)
		}
	}
	return out
}

// ClaimClass is the claim's class name: spec.storageClassName, else the
// beta annotation, else "" (upstream's GetPersistentVolumeClaimClass).
func ClaimClass(c *v1.PersistentVolumeClaim) string {
	if c.Spec.StorageClassName != nil {
		return *c.Spec.StorageClassName
	}
	return c.Annotations[v1.BetaStorageClassAnnotation]
}

// VolumeClass is the volume's class name (GetPersistentVolumeClass).
func VolumeClass(pv *v1.PersistentVolume) string {
	if c, ok := pv.Annotations[v1.BetaStorageClassAnnotation]; ok {
		return c
	}
	return pv.Spec.StorageClassName
}

// DelayBinding says whether claims of class wait for a pod to be
// scheduled before they are bound (WaitForFirstConsumer).
func DelayBinding(class *storagev1.StorageClass) bool {
	return class != nil && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// Terminated says whether a pod has finished: its phase is Succeeded or
// Failed (upstream's IsPodTerminated, for the pods the API reports).
func Terminated(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}
