package builtin

import (
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/apis/core/defaults"
	corevalidation "github.com/kite-project/kite/apis/core/validation"
	nodevalidation "github.com/kite-project/kite/apis/node/validation"
	schedulingdefaults "github.com/kite-project/kite/apis/scheduling/defaults"
	schedulingvalidation "github.com/kite-project/kite/apis/scheduling/validation"
	storagedefaults "github.com/kite-project/kite/apis/storage/defaults"
	storagevalidation "github.com/kite-project/kite/apis/storage/validation"
	"github.com/kite-project/kite/registry"
)

// coverageStrategies are the resources of kube-apiserver 1.37's
// discovery that no other part of the tree serves (issue 26): stored
// objects with upstream's rules and no behaviour of their own.
func coverageStrategies() []*registry.Strategy {
	all := []*registry.Strategy{
		APIServices(),
		declared[*corev1.LimitRange]{
			kind: corev1.SchemeGroupVersion.WithKind("LimitRange"), resource: "limitranges", short: []string{"limits"}, namespaced: true,
			newList: func() runtime.Object { return &corev1.LimitRangeList{} }, defaults: defaults.LimitRange,
			validate: corevalidation.ValidateLimitRange, update: corevalidation.ValidateLimitRangeUpdate,
		}.strategy(),
		declared[*corev1.ResourceQuota]{
			kind: corev1.SchemeGroupVersion.WithKind("ResourceQuota"), resource: "resourcequotas", short: []string{"quota"}, namespaced: true,
			newList:  func() runtime.Object { return &corev1.ResourceQuotaList{} },
			validate: corevalidation.ValidateResourceQuota, update: corevalidation.ValidateResourceQuotaUpdate,
			status: corevalidation.ValidateResourceQuotaStatusUpdate,
		}.strategy(),
	}
	all = append(all, networkingStrategies()...)
	all = append(all,
		declared[*nodev1.RuntimeClass]{
			kind: nodev1.SchemeGroupVersion.WithKind("RuntimeClass"), resource: "runtimeclasses",
			newList:  func() runtime.Object { return &nodev1.RuntimeClassList{} },
			validate: nodevalidation.ValidateRuntimeClass, update: nodevalidation.ValidateRuntimeClassUpdate,
		}.strategy(),
		declared[*schedulingv1.PriorityClass]{
			kind: schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"), resource: "priorityclasses", short: []string{"pc"},
			newList:  func() runtime.Object { return &schedulingv1.PriorityClassList{} },
			defaults: schedulingdefaults.PriorityClass,
			validate: schedulingvalidation.ValidatePriorityClass, update: schedulingvalidation.ValidatePriorityClassUpdate,
		}.strategy(),
	)
	all = append(all, storageStrategies()...)
	all = append(all, certificatesStrategies()...)
	all = append(all, resourceStrategies()...)
	all = append(all, flowcontrolStrategies()...)
	return append(all, storageMigrationStrategies()...)
}

// storageStrategies are storage.k8s.io/v1's CSI kinds, volume attachments
// and volume attributes classes (storageclasses come with the volumes).
func storageStrategies() []*registry.Strategy {
	gv := storagev1.SchemeGroupVersion
	return []*registry.Strategy{
		declared[*storagev1.CSIDriver]{
			kind: gv.WithKind("CSIDriver"), resource: "csidrivers",
			newList:  func() runtime.Object { return &storagev1.CSIDriverList{} },
			defaults: storagedefaults.CSIDriver,
			name:     storagevalidation.ValidateCSIDriverName,
			validate: storagevalidation.ValidateCSIDriver, update: storagevalidation.ValidateCSIDriverUpdate,
			generation: true,
		}.strategy(),
		declared[*storagev1.CSINode]{
			kind: gv.WithKind("CSINode"), resource: "csinodes",
			newList:  func() runtime.Object { return &storagev1.CSINodeList{} },
			validate: storagevalidation.ValidateCSINode, update: storagevalidation.ValidateCSINodeUpdate,
			status: noStatusRules[*storagev1.CSINode],
		}.strategy(),
		declared[*storagev1.CSIStorageCapacity]{
			kind: gv.WithKind("CSIStorageCapacity"), resource: "csistoragecapacities", namespaced: true,
			newList:  func() runtime.Object { return &storagev1.CSIStorageCapacityList{} },
			validate: storagevalidation.ValidateCSIStorageCapacity, update: storagevalidation.ValidateCSIStorageCapacityUpdate,
		}.strategy(),
		declared[*storagev1.VolumeAttachment]{
			kind: gv.WithKind("VolumeAttachment"), resource: "volumeattachments",
			newList:  func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
			validate: storagevalidation.ValidateVolumeAttachment, update: storagevalidation.ValidateVolumeAttachmentUpdate,
			status: storagevalidation.ValidateVolumeAttachmentStatus,
		}.strategy(),
		declared[*storagev1.VolumeAttributesClass]{
			kind: gv.WithKind("VolumeAttributesClass"), resource: "volumeattributesclasses", short: []string{"vac"},
			newList:  func() runtime.Object { return &storagev1.VolumeAttributesClassList{} },
			validate: storagevalidation.ValidateVolumeAttributesClass, update: storagevalidation.ValidateVolumeAttributesClassUpdate,
		}.strategy(),
	}
}

// noStatusRules is the status validation of a kind whose status upstream
// checks with nothing beyond the metadata.
func noStatusRules[T runtime.Object](_, _ T) field.ErrorList { return nil }
