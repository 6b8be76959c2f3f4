package builtin

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	appsdefaults "github.com/kite-project/kite/apis/apps/defaults"
	appsvalidation "github.com/kite-project/kite/apis/apps/validation"
	"github.com/kite-project/kite/registry"
)

// Deployments returns the strategy of apps/v1 deployments. Generation
// moves with every change of the spec or the annotations (they are copied
// to the ReplicaSets), so status.observedGeneration tells a rollout's
// progress apart from a scale.
func Deployments() *registry.Strategy {
	return &registry.Strategy{
		Kind:              appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Resource:          "deployments",
		SingularName:      "deployment",
		ShortNames:        []string{"deploy"},
		Categories:        []string{"all"},
		Namespaced:        true,
		New:               func() runtime.Object { return &appsv1.Deployment{} },
		NewList:           func() runtime.Object { return &appsv1.DeploymentList{} },
		Default:           func(obj runtime.Object) { appsdefaults.Deployment(obj.(*appsv1.Deployment)) },
		ValidatesMetadata: true,
		PrepareForCreate: func(obj runtime.Object) {
			d := obj.(*appsv1.Deployment)
			d.Status = appsv1.DeploymentStatus{}
			d.Generation = 1
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
			d.Status = o.Status
			if !apiequality.Semantic.DeepEqual(d.Spec, o.Spec) || !apiequality.Semantic.DeepEqual(d.Annotations, o.Annotations) {
				d.Generation = o.Generation + 1
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return appsvalidation.ValidateDeployment(obj.(*appsv1.Deployment))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return appsvalidation.ValidateDeploymentUpdate(obj.(*appsv1.Deployment), old.(*appsv1.Deployment))
		},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
					d.Spec, d.Labels = o.Spec, o.Labels
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return appsvalidation.ValidateDeploymentStatusUpdate(obj.(*appsv1.Deployment), old.(*appsv1.Deployment))
				},
			},
			"scale": scale(appsv1.Resource("deployments/scale"), func(obj runtime.Object) (*int32, *metav1.LabelSelector, int32) {
				d := obj.(*appsv1.Deployment)
				return d.Spec.Replicas, d.Spec.Selector, d.Status.Replicas
			}, func(obj runtime.Object) *metav1.ObjectMeta { return &obj.(*appsv1.Deployment).ObjectMeta }),
		},
	}
}

// ReplicaSets returns the strategy of apps/v1 replicasets.
func ReplicaSets() *registry.Strategy {
	return &registry.Strategy{
		Kind:              appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		Resource:          "replicasets",
		SingularName:      "replicaset",
		ShortNames:        []string{"rs"},
		Categories:        []string{"all"},
		Namespaced:        true,
		New:               func() runtime.Object { return &appsv1.ReplicaSet{} },
		NewList:           func() runtime.Object { return &appsv1.ReplicaSetList{} },
		Default:           func(obj runtime.Object) { appsdefaults.ReplicaSet(obj.(*appsv1.ReplicaSet)) },
		ValidatesMetadata: true,
		PrepareForCreate: func(obj runtime.Object) {
			rs := obj.(*appsv1.ReplicaSet)
			rs.Status = appsv1.ReplicaSetStatus{}
			rs.Generation = 1
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			rs, o := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
			rs.Status = o.Status
			if !apiequality.Semantic.DeepEqual(rs.Spec, o.Spec) {
				rs.Generation = o.Generation + 1
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return appsvalidation.ValidateReplicaSet(obj.(*appsv1.ReplicaSet))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return appsvalidation.ValidateReplicaSetUpdate(obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet))
		},
		AllowUnconditionalUpdate: true,
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					rs, o := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
					rs.Spec, rs.Labels = o.Spec, o.Labels
				},
				ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
					return appsvalidation.ValidateReplicaSetStatusUpdate(obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet))
				},
			},
			"scale": scale(appsv1.Resource("replicasets/scale"), func(obj runtime.Object) (*int32, *metav1.LabelSelector, int32) {
				rs := obj.(*appsv1.ReplicaSet)
				return rs.Spec.Replicas, rs.Spec.Selector, rs.Status.Replicas
			}, func(obj runtime.Object) *metav1.ObjectMeta { return &obj.(*appsv1.ReplicaSet).ObjectMeta }),
		},
	}
}

// ControllerRevisions returns the strategy of apps/v1
// controllerrevisions (the history of DaemonSets and StatefulSets).
func ControllerRevisions() *registry.Strategy {
	return &registry.Strategy{
		Kind:              appsv1.SchemeGroupVersion.WithKind("ControllerRevision"),
		Resource:          "controllerrevisions",
		SingularName:      "controllerrevision",
		Namespaced:        true,
		New:               func() runtime.Object { return &appsv1.ControllerRevision{} },
		NewList:           func() runtime.Object { return &appsv1.ControllerRevisionList{} },
		ValidatesMetadata: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return appsvalidation.ValidateControllerRevision(obj.(*appsv1.ControllerRevision))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return appsvalidation.ValidateControllerRevisionUpdate(obj.(*appsv1.ControllerRevision), old.(*appsv1.ControllerRevision))
		},
		AllowUnconditionalUpdate: true,
	}
}

// scale is the autoscaling/v1 Scale subresource of a workload whose
// replicas, selector and observed replicas parts returns: the Scale's
// metadata is the object's name, namespace, uid, resourceVersion and
// creationTimestamp; a write sets spec.replicas, with the Scale's
// resourceVersion and uid (when set) as preconditions.
func scale(resource schema.GroupResource, parts func(runtime.Object) (*int32, *metav1.LabelSelector, int32), objMeta func(runtime.Object) *metav1.ObjectMeta) *registry.Subresource {
	kind := autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	return &registry.Subresource{
		Kind: kind,
		New:  func() runtime.Object { return &autoscalingv1.Scale{} },
		// apps/v1 is the only version served (upstream's mappings also
		// list apps/v1beta1, v1beta2 and extensions/v1beta1).
		ReplicasPaths: managedfields.ResourcePathMappings{
			appsv1.SchemeGroupVersion.String(): fieldpath.MakePathOrDie("spec", "replicas"),
		},
		View: func(obj runtime.Object) (runtime.Object, error) {
			replicas, sel, observed := parts(obj)
			m := objMeta(obj)
			s := &autoscalingv1.Scale{
				ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID,
					ResourceVersion: m.ResourceVersion, CreationTimestamp: m.CreationTimestamp},
				Status: autoscalingv1.ScaleStatus{Replicas: observed},
			}
			s.SetGroupVersionKind(kind)
			if replicas != nil {
				s.Spec.Replicas = *replicas
			}
			if sel != nil {
				if ls, err := metav1.LabelSelectorAsSelector(sel); err == nil {
					s.Status.Selector = ls.String()
				}
			}
			return s, nil
		},
		Apply: func(obj, view runtime.Object) (runtime.Object, error) {
			s, ok := view.(*autoscalingv1.Scale)
			if !ok {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("expected an autoscaling/v1 Scale, got %T", view))
			}
			m := objMeta(obj)
			if s.Name != "" && s.Name != m.Name {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", s.Name, m.Name))
			}
			if errs := apivalidation.ValidateNonnegativeField(int64(s.Spec.Replicas), field.NewPath("spec", "replicas")); len(errs) > 0 {
				return nil, apierrors.NewInvalid(kind.GroupKind(), m.Name, errs)
			}
			if s.UID != "" && s.UID != m.UID {
				return nil, apierrors.NewConflict(resource, m.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", s.UID, m.UID))
			}
			if s.ResourceVersion != "" {
				m.ResourceVersion = s.ResourceVersion
			}
			replicas, _, _ := parts(obj)
			*replicas = s.Spec.Replicas
			return obj, nil
		},
	}
}
