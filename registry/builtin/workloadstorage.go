package builtin

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsdefaults "github.com/kite-project/kite/apis/apps/defaults"
	appsvalidation "github.com/kite-project/kite/apis/apps/validation"
	coredefaults "github.com/kite-project/kite/apis/core/defaults"
	corevalidation "github.com/kite-project/kite/apis/core/validation"
	storagedefaults "github.com/kite-project/kite/apis/storage/defaults"
	storagevalidation "github.com/kite-project/kite/apis/storage/validation"
	"github.com/kite-project/kite/registry"
)

// workloadStorageStrategies are the StatefulSets and DaemonSets and the
// storage they claim: PersistentVolumes, PersistentVolumeClaims and
// StorageClasses.
func workloadStorageStrategies(now func() time.Time) []*registry.Strategy {
	return []*registry.Strategy{
		StatefulSets(),
		DaemonSets(),
		PersistentVolumes(now),
		PersistentVolumeClaims(),
		StorageClasses(),
	}
}

// StatefulSets returns the strategy of apps/v1 statefulsets, with status
// and scale. Generation moves with every change of the spec.
func StatefulSets() *registry.Strategy {
	return &registry.Strategy{
		Kind:              appsv1.SchemeGroupVersion.WithKind("StatefulSet"),
		Resource:          "statefulsets",
		SingularName:      "statefulset",
		ShortNames:        []string{"sts"},
		Categories:        []string{"all"},
		Namespaced:        true,
		New:               func() runtime.Object { return &appsv1.StatefulSet{} },
		NewList:           func() runtime.Object { return &appsv1.StatefulSetList{} },
		Default:           func(obj runtime.Object) { appsdefaults.StatefulSet(obj.(*appsv1.StatefulSet)) },
		ValidateName:      appsvalidation.ValidateStatefulSetName,
		ValidatesMetadata: true,
		PrepareForCreate: func(obj runtime.Object) {
			s := obj.(*appsv1.StatefulSet)
			s.Status = appsv1.StatefulSetStatus{}
			s.Generation = 1
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			s, o := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
			s.Status = o.Status
			if !apiequality.Semantic.DeepEqual(s.Spec, o.Spec) {
				s.Generation = o.Generation + 1
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return appsvalidation.ValidateStatefulSet(obj.(*appsv1.StatefulSet))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return appsvalidation.ValidateStatefulSetUpdate(obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet))
		},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					obj.(*appsv1.StatefulSet).Spec = old.(*appsv1.StatefulSet).Spec
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return appsvalidation.ValidateStatefulSetStatusUpdate(obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet))
				},
			},
			"scale": scale(appsv1.Resource("statefulsets/scale"), func(obj runtime.Object) (*int32, *metav1.LabelSelector, int32) {
				s := obj.(*appsv1.StatefulSet)
				return s.Spec.Replicas, s.Spec.Selector, s.Status.Replicas
			}, func(obj runtime.Object) *metav1.ObjectMeta { return &obj.(*appsv1.StatefulSet).ObjectMeta }),
		},
	}
}

// DaemonSets returns the strategy of apps/v1 daemonsets, with status.
// apps/v1 carries upstream's internal spec.templateGeneration in the
// deprecated.daemonset.template.generation annotation: 1 on create, one
// more with every change of the template, whatever a client sends.
func DaemonSets() *registry.Strategy {
	setTemplateGeneration := func(ds *appsv1.DaemonSet, gen int64) {
		ann := make(map[string]string, len(ds.Annotations)+1)
		for k, v := range ds.Annotations {
			ann[k] = v
		}
		ann[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(gen, 10)
		ds.Annotations = ann
	}
	return &registry.Strategy{
		Kind:              appsv1.SchemeGroupVersion.WithKind("DaemonSet"),
		Resource:          "daemonsets",
		SingularName:      "daemonset",
		ShortNames:        []string{"ds"},
		Categories:        []string{"all"},
		Namespaced:        true,
		New:               func() runtime.Object { return &appsv1.DaemonSet{} },
		NewList:           func() runtime.Object { return &appsv1.DaemonSetList{} },
		Default:           func(obj runtime.Object) { appsdefaults.DaemonSet(obj.(*appsv1.DaemonSet)) },
		ValidatesMetadata: true,
		PrepareForCreate: func(obj runtime.Object) {
			ds := obj.(*appsv1.DaemonSet)
			ds.Status = appsv1.DaemonSetStatus{}
			ds.Generation = 1
			setTemplateGeneration(ds, max(appsdefaults.DaemonSetTemplateGeneration(ds), 1))
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			ds, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
			ds.Status = o.Status
			gen := appsdefaults.DaemonSetTemplateGeneration(o)
			switch {
			case !apiequality.Semantic.DeepEqual(ds.Spec.Template, o.Spec.Template):
				gen++
				ds.Generation = o.Generation + 1
			case !apiequality.Semantic.DeepEqual(ds.Spec, o.Spec):
				ds.Generation = o.Generation + 1
			}
			setTemplateGeneration(ds, gen)
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return appsvalidation.ValidateDaemonSet(obj.(*appsv1.DaemonSet))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return appsvalidation.ValidateDaemonSetUpdate(obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet))
		},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					obj.(*appsv1.DaemonSet).Spec = old.(*appsv1.DaemonSet).Spec
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return appsvalidation.ValidateDaemonSetStatusUpdate(obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet))
				},
			},
		},
	}
}

// PersistentVolumes returns the strategy of core/v1 persistentvolumes,
// with status. A volume starts Pending; status.lastPhaseTransitionTime
// moves with the phase.
func PersistentVolumes(now func() time.Time) *registry.Strategy {
	return &registry.Strategy{
		Kind:              corev1.SchemeGroupVersion.WithKind("PersistentVolume"),
		Resource:          "persistentvolumes",
		SingularName:      "persistentvolume",
		ShortNames:        []string{"pv"},
		New:               func() runtime.Object { return &corev1.PersistentVolume{} },
		NewList:           func() runtime.Object { return &corev1.PersistentVolumeList{} },
		Default:           func(obj runtime.Object) { coredefaults.PersistentVolume(obj.(*corev1.PersistentVolume)) },
		ValidatesMetadata: true,
		PrepareForCreate: func(obj runtime.Object) {
			pv := obj.(*corev1.PersistentVolume)
			t := metav1.NewTime(now().Truncate(time.Second))
			pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: &t}
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			obj.(*corev1.PersistentVolume).Status = old.(*corev1.PersistentVolume).Status
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidatePersistentVolume(obj.(*corev1.PersistentVolume))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidatePersistentVolumeUpdate(obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume))
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			// upstream: "This is a bug, but we need to support it for
			// backward compatibility."
			return fields.Set{"name": obj.(*corev1.PersistentVolume).Name}
		},
		FieldLabels:              []string{"name"},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					pv, o := obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume)
					pv.Spec = o.Spec
					switch t := pv.Status.LastPhaseTransitionTime; {
					case o.Status.Phase == pv.Status.Phase && t == nil:
						pv.Status.LastPhaseTransitionTime = o.Status.LastPhaseTransitionTime
					case o.Status.Phase != pv.Status.Phase && (t == nil || t.Equal(o.Status.LastPhaseTransitionTime)):
						n := metav1.NewTime(now().Truncate(time.Second))
						pv.Status.LastPhaseTransitionTime = &n
					}
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return corevalidation.ValidatePersistentVolumeStatusUpdate(obj.(*corev1.PersistentVolume), old.(*corev1.PersistentVolume))
				},
			},
		},
	}
}

// PersistentVolumeClaims returns the strategy of core/v1
// persistentvolumeclaims, with status. A claim starts Pending (upstream
// clears the status on create and its read-time defaulting shows Pending).
func PersistentVolumeClaims() *registry.Strategy {
	return &registry.Strategy{
		Kind:              corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"),
		Resource:          "persistentvolumeclaims",
		SingularName:      "persistentvolumeclaim",
		ShortNames:        []string{"pvc"},
		Namespaced:        true,
		New:               func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		NewList:           func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
		Default:           func(obj runtime.Object) { coredefaults.PersistentVolumeClaim(obj.(*corev1.PersistentVolumeClaim)) },
		ValidatesMetadata: true,
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*corev1.PersistentVolumeClaim).Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			obj.(*corev1.PersistentVolumeClaim).Status = old.(*corev1.PersistentVolumeClaim).Status
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return corevalidation.ValidatePersistentVolumeClaim(obj.(*corev1.PersistentVolumeClaim))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return corevalidation.ValidatePersistentVolumeClaimUpdate(obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim))
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"name": obj.(*corev1.PersistentVolumeClaim).Name}
		},
		FieldLabels:              []string{"name"},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					obj.(*corev1.PersistentVolumeClaim).Spec = old.(*corev1.PersistentVolumeClaim).Spec
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return corevalidation.ValidatePersistentVolumeClaimStatusUpdate(obj.(*corev1.PersistentVolumeClaim), old.(*corev1.PersistentVolumeClaim))
				},
			},
		},
	}
}

// StorageClasses returns the strategy of storage.k8s.io/v1 storageclasses.
func StorageClasses() *registry.Strategy {
	return &registry.Strategy{
		Kind:              storagev1.SchemeGroupVersion.WithKind("StorageClass"),
		Resource:          "storageclasses",
		SingularName:      "storageclass",
		ShortNames:        []string{"sc"},
		New:               func() runtime.Object { return &storagev1.StorageClass{} },
		NewList:           func() runtime.Object { return &storagev1.StorageClassList{} },
		Default:           func(obj runtime.Object) { storagedefaults.StorageClass(obj.(*storagev1.StorageClass)) },
		ValidatesMetadata: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return storagevalidation.ValidateStorageClass(obj.(*storagev1.StorageClass))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return storagevalidation.ValidateStorageClassUpdate(obj.(*storagev1.StorageClass), old.(*storagev1.StorageClass))
		},
		AllowUnconditionalUpdate: true,
	}
}
