package apiserver_test

import (
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// workloadStorageSample is the sample of a StatefulSet, a DaemonSet, a
// PersistentVolume, a PersistentVolumeClaim or a StorageClass; nil for
// other kinds.
func workloadStorageSample(gk schema.GroupKind, meta metav1.ObjectMeta, selector *metav1.LabelSelector, template v1.PodTemplateSpec) runtime.Object {
	claimSpec := v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}
	cluster := meta
	cluster.Namespace = ""
	switch gk {
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		replicas := int32(2)
		return &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: &replicas, ServiceName: "web", Selector: selector, Template: template,
			VolumeClaimTemplates: []v1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: claimSpec}}}}
	case schema.GroupKind{Group: "apps", Kind: "DaemonSet"}:
		return &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: selector, Template: template}}
	case schema.GroupKind{Kind: "PersistentVolume"}:
		return &v1.PersistentVolume{ObjectMeta: cluster, Spec: v1.PersistentVolumeSpec{
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}, AccessModes: claimSpec.AccessModes,
			PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv/" + meta.Name}}}}
	case schema.GroupKind{Kind: "PersistentVolumeClaim"}:
		return &v1.PersistentVolumeClaim{ObjectMeta: meta, Spec: claimSpec}
	case schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"}:
		return &storagev1.StorageClass{ObjectMeta: cluster, Provisioner: "example.com/local", Parameters: map[string]string{"type": "fast"}}
	}
	return nil
}
