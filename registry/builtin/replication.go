package builtin

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	appsvalidation "github.com/kite-project/kite/apis/apps/validation"
	"github.com/kite-project/kite/apis/core/defaults"
	"github.com/kite-project/kite/apis/core/validation"
	"github.com/kite-project/kite/registry"
)

// ReplicationControllers returns the strategy of core/v1
// replicationcontrollers (upstream's pkg/registry/core/replicationcontroller),
// with status and an autoscaling/v1 scale whose selector is the
// controller's label map.
func ReplicationControllers() *registry.Strategy {
	sc := scale(corev1.Resource("replicationcontrollers/scale"), func(obj runtime.Object) (*int32, *metav1.LabelSelector, int32) {
		rc := obj.(*corev1.ReplicationController)
		return rc.Spec.Replicas, &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}, rc.Status.Replicas
	}, func(obj runtime.Object) *metav1.ObjectMeta { return &obj.(*corev1.ReplicationController).ObjectMeta })
	sc.ReplicasPaths = managedfields.ResourcePathMappings{corev1.SchemeGroupVersion.String(): fieldpath.MakePathOrDie("spec", "replicas")}
	return &registry.Strategy{
		Kind:              corev1.SchemeGroupVersion.WithKind("ReplicationController"),
		Resource:          "replicationcontrollers",
		SingularName:      "replicationcontroller",
		ShortNames:        []string{"rc"},
		Categories:        []string{"all"},
		Namespaced:        true,
		New:               func() runtime.Object { return &corev1.ReplicationController{} },
		NewList:           func() runtime.Object { return &corev1.ReplicationControllerList{} },
		Default:           func(obj runtime.Object) { defaults.ReplicationController(obj.(*corev1.ReplicationController)) },
		ValidatesMetadata: true,
		PrepareForCreate: func(obj runtime.Object) {
			rc := obj.(*corev1.ReplicationController)
			rc.Status = corev1.ReplicationControllerStatus{}
			rc.Generation = 1
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			rc, o := obj.(*corev1.ReplicationController), old.(*corev1.ReplicationController)
			rc.Status = o.Status
			if !apiequality.Semantic.DeepEqual(rc.Spec, o.Spec) {
				rc.Generation = o.Generation + 1
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateReplicationController(obj.(*corev1.ReplicationController))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateReplicationControllerUpdate(obj.(*corev1.ReplicationController), old.(*corev1.ReplicationController))
		},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					rc, o := obj.(*corev1.ReplicationController), old.(*corev1.ReplicationController)
					rc.Spec, rc.Labels = o.Spec, o.Labels
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					// Upstream's rules for a ReplicationController's status
					// are the ReplicaSet's, with the same paths and messages.
					return appsvalidation.ValidateReplicaSetStatusUpdate(replicaSetStatusOf(obj), replicaSetStatusOf(old))
				},
			},
			"scale": sc,
		},
	}
}

// replicaSetStatusOf is a ReplicaSet with the controller's metadata and
// status counts, for the ReplicaSet's status validation.
func replicaSetStatusOf(obj runtime.Object) *appsv1.ReplicaSet {
	rc := obj.(*corev1.ReplicationController)
	return &appsv1.ReplicaSet{ObjectMeta: rc.ObjectMeta, Status: appsv1.ReplicaSetStatus{
		Replicas: rc.Status.Replicas, FullyLabeledReplicas: rc.Status.FullyLabeledReplicas, ReadyReplicas: rc.Status.ReadyReplicas,
		AvailableReplicas: rc.Status.AvailableReplicas, ObservedGeneration: rc.Status.ObservedGeneration,
	}}
}

// PodTemplates returns the strategy of core/v1 podtemplates: objects
// only (upstream's pkg/registry/core/podtemplate); a change of the
// template moves the generation.
func PodTemplates() *registry.Strategy {
	return &registry.Strategy{
		Kind:              corev1.SchemeGroupVersion.WithKind("PodTemplate"),
		Resource:          "podtemplates",
		SingularName:      "podtemplate",
		Namespaced:        true,
		New:               func() runtime.Object { return &corev1.PodTemplate{} },
		NewList:           func() runtime.Object { return &corev1.PodTemplateList{} },
		Default:           func(obj runtime.Object) { defaults.PodTemplate(obj.(*corev1.PodTemplate)) },
		ValidatesMetadata: true,
		PrepareForCreate:  func(obj runtime.Object) { obj.(*corev1.PodTemplate).Generation = 1 },
		PrepareForUpdate: func(obj, old runtime.Object) {
			t, o := obj.(*corev1.PodTemplate), old.(*corev1.PodTemplate)
			if !apiequality.Semantic.DeepEqual(t.Template, o.Template) {
				t.Generation = o.Generation + 1
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidatePodTemplate(obj.(*corev1.PodTemplate))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidatePodTemplateUpdate(obj.(*corev1.PodTemplate), old.(*corev1.PodTemplate))
		},
		AllowUnconditionalUpdate: true,
	}
}
