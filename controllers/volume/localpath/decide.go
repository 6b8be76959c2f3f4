package localpath

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/storage/localpath"
	"github.com/kite-project/kite/controllers/volume"
)

// hostnameLabel pins a volume to its node, as rancher's provisioner does.
const hostnameLabel = "kubernetes.io/hostname"

// VolumeName is the name of the volume provisioned for a claim,
// upstream's "pvc-<claim uid>": a second attempt finds the first's.
func VolumeName(claim *v1.PersistentVolumeClaim) string { return "pvc-" + string(claim.UID) }

// Wants says whether the claim waits for this provisioner: the binder
// handed it over (volume.kubernetes.io/storage-provisioner), it has no
// volume yet, it is not being deleted, and its class is ours.
func Wants(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass) bool {
	return claim.Annotations[volume.AnnStorageProvisioner] == localpath.ProvisionerName && claim.Spec.VolumeName == "" &&
		claim.DeletionTimestamp == nil && class != nil && class.Provisioner == localpath.ProvisionerName
}

// Node is the node to provision the claim's volume on: the scheduler's
// choice (volume.kubernetes.io/selected-node) for a WaitForFirstConsumer
// class; for an Immediate one, the first schedulable node by name that
// says where its local-path volumes live. nodes are every node.
func Node(claim *v1.PersistentVolumeClaim, nodes []*v1.Node) (*v1.Node, error) {
	if name, ok := claim.Annotations[volume.AnnSelectedNode]; ok {
		for _, n := range nodes {
			if n.Name == name {
				return n, nil
			}
		}
		return nil, fmt.Errorf("failed to get target node: node %q not found", name)
	}
	sorted := append([]*v1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, n := range sorted {
		if !n.Spec.Unschedulable && n.Annotations[localpath.DirAnnotation] != "" {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no node was specified and no node has a local-path directory (annotation %s)", localpath.DirAnnotation)
}

// Volume is the PersistentVolume that provisions claim of class on node:
// a hostPath directory (DirectoryOrCreate: the node's agent makes it when
// it first mounts it) under the node's local-path directory, pinned to
// the node by node affinity, pre-bound to the claim (the binder finishes
// the binding), with the class's reclaim policy and mount options, the
// claim's requested size and access modes.
func Volume(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, node *v1.Node) (*v1.PersistentVolume, error) {
	dir := node.Annotations[localpath.DirAnnotation]
	if dir == "" {
		return nil, fmt.Errorf("node %q does not say where its local-path volumes live (annotation %s): is a Kite agent running it?", node.Name, localpath.DirAnnotation)
	}
	if claim.Spec.Selector != nil {
		return nil, fmt.Errorf("claim.Spec.Selector is not supported")
	}
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return nil, fmt.Errorf("volumeMode Block is not supported: local-path volumes are directories")
	}
	size, ok := claim.Spec.Resources.Requests[v1.ResourceStorage]
	if !ok {
		return nil, fmt.Errorf("claim %s/%s requests no storage", claim.Namespace, claim.Name)
	}
	hostname := node.Labels[hostnameLabel]
	if hostname == "" {
		hostname = node.Name
	}
	name := VolumeName(claim)
	policy := v1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		policy = *class.ReclaimPolicy
	}
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{volume.AnnDynamicallyProvisioned: localpath.ProvisionerName},
		},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: size},
			AccessModes: claim.Spec.AccessModes,
			PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{
				Path: localpath.VolumePath(dir, name), Type: ptr.To(v1.HostPathDirectoryOrCreate),
			}},
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: claim.Namespace, Name: claim.Name,
				UID: claim.UID, ResourceVersion: claim.ResourceVersion},
			PersistentVolumeReclaimPolicy: policy,
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			VolumeMode:                    ptr.To(v1.PersistentVolumeFilesystem),
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: hostnameLabel, Operator: v1.NodeSelectorOpIn, Values: []string{hostname}}},
			}}}},
		},
	}, nil
}

// Deletes says whether the volume is to be deleted: one of ours,
// released by its claim, with the Delete policy. Its directory goes with
// it on its node (the agent removes directories whose volume is gone).
func Deletes(pv *v1.PersistentVolume) bool {
	return pv.Annotations[volume.AnnDynamicallyProvisioned] == localpath.ProvisionerName && pv.DeletionTimestamp == nil &&
		pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete && pv.Status.Phase == v1.VolumeReleased
}
