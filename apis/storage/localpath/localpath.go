// Package localpath names Kite's built-in local provisioner, as k3s ships
// rancher's local-path-provisioner: its default StorageClass, the
// provisioner name its PersistentVolumes carry, and where on a node their
// directories live. The API server (the StorageClass at start), the
// provisioner (controllers/volume/localpath) and the agent (which creates
// a volume's directory when it first mounts it and removes it once its
// PersistentVolume is gone) agree through these names (docs/storage.md).
package localpath

import (
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/storage/defaults"
)

const (
	// StorageClassName is the default StorageClass made at server start.
	StorageClassName = "local-path"
	// ProvisionerName is the StorageClass's provisioner, and the
	// pv.kubernetes.io/provisioned-by of the volumes it makes.
	ProvisionerName = "kite.io/local-path"
	// DirAnnotation is set by each agent on its Node: the directory
	// (<agent root>/storage) under which that node keeps local-path
	// volumes. The server cannot know a remote agent's root directory;
	// the provisioner reads it here. A node without it cannot get
	// local-path volumes.
	DirAnnotation = "kite.io/local-path-dir"
	// DirName is the directory under the agent's root directory.
	DirName = "storage"
)

// Dir is the directory of local-path volumes under an agent's root
// directory.
func Dir(rootDir string) string { return filepath.Join(rootDir, DirName) }

// VolumePath is the directory of the PersistentVolume named pv under a
// node's local-path directory (its DirAnnotation).
func VolumePath(nodeDir, pv string) string { return filepath.Join(nodeDir, pv) }

// StorageClass is the default StorageClass local-path: volumes are made
// once a pod that uses the claim is scheduled (WaitForFirstConsumer), on
// that pod's node, and deleted with their claim (Delete).
func StorageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClassName,
			Annotations: map[string]string{defaults.IsDefaultClassAnnotation: "true"},
		},
		Provisioner:       ProvisionerName,
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}
