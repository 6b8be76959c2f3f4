package builtin

import (
	"maps"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	autoscalingconversion "github.com/kite-project/kite/apis/autoscaling/conversion"
	autoscalingdefaults "github.com/kite-project/kite/apis/autoscaling/defaults"
	autoscalingvalidation "github.com/kite-project/kite/apis/autoscaling/validation"
	"github.com/kite-project/kite/registry"
)

// HorizontalPodAutoscalers returns the strategy of autoscaling/v2
// horizontalpodautoscalers (upstream's pkg/registry/autoscaling/
// horizontalpodautoscaler, with HPAGeneration on as in 1.37): spec
// changes move the generation; status is the HPA controller's, written
// through the status subresource.
func HorizontalPodAutoscalers() *registry.Strategy {
	return &registry.Strategy{
		Kind:         autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"),
		Resource:     "horizontalpodautoscalers",
		SingularName: "horizontalpodautoscaler",
		ShortNames:   []string{"hpa"},
		Categories:   []string{"all"},
		Namespaced:   true,
		New:          func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
		NewList:      func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} },
		Default: func(obj runtime.Object) {
			autoscalingdefaults.HorizontalPodAutoscaler(obj.(*autoscalingv2.HorizontalPodAutoscaler))
		},
		PrepareForCreate: func(obj runtime.Object) {
			h := obj.(*autoscalingv2.HorizontalPodAutoscaler)
			h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
			h.Generation = 1
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			h, o := obj.(*autoscalingv2.HorizontalPodAutoscaler), old.(*autoscalingv2.HorizontalPodAutoscaler)
			h.Status = o.Status
			if !apiequality.Semantic.DeepEqual(h.Spec, o.Spec) {
				h.Generation = o.Generation + 1
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			h := obj.(*autoscalingv2.HorizontalPodAutoscaler)
			return autoscalingvalidation.ValidateHorizontalPodAutoscaler(h, autoscalingvalidation.OptionsFor(h, nil))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			h, o := obj.(*autoscalingv2.HorizontalPodAutoscaler), old.(*autoscalingv2.HorizontalPodAutoscaler)
			return autoscalingvalidation.ValidateHorizontalPodAutoscaler(h, autoscalingvalidation.OptionsFor(h, o))
		},
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					obj.(*autoscalingv2.HorizontalPodAutoscaler).Spec = old.(*autoscalingv2.HorizontalPodAutoscaler).Spec
				},
				ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList {
					return autoscalingvalidation.ValidateStatusUpdate(&obj.(*autoscalingv2.HorizontalPodAutoscaler).Status)
				},
			},
		},
	}
}

// HorizontalPodAutoscalersV1 returns the strategy of autoscaling/v1
// horizontalpodautoscalers: the same objects as autoscaling/v2's, stored
// as v2 and converted through upstream's round-trip annotations
// (apis/autoscaling/conversion). Validation is v2's on the converted
// object, as upstream validates its internal type, so errors name v2's
// fields (spec.metrics[0].resource.target.averageUtilization for a bad
// targetCPUUtilizationPercentage), as upstream's do.
func HorizontalPodAutoscalersV1() *registry.Strategy {
	toV2 := func(obj runtime.Object) *autoscalingv2.HorizontalPodAutoscaler {
		h, _ := autoscalingconversion.ToV2(obj.(*autoscalingv1.HorizontalPodAutoscaler))
		return h
	}
	v2 := HorizontalPodAutoscalers()
	return &registry.Strategy{
		Kind:         autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"),
		Resource:     v2.Resource,
		SingularName: v2.SingularName,
		ShortNames:   v2.ShortNames,
		Categories:   v2.Categories,
		Namespaced:   true,
		StoredWith:   autoscalingv2.Resource("horizontalpodautoscalers"),
		Conversion: &registry.Conversion{
			ToStored: func(obj runtime.Object) (runtime.Object, error) {
				return autoscalingconversion.ToV2(obj.(*autoscalingv1.HorizontalPodAutoscaler))
			},
			FromStored: func(obj runtime.Object) (runtime.Object, error) {
				return autoscalingconversion.ToV1(obj.(*autoscalingv2.HorizontalPodAutoscaler))
			},
			NewStored:     func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
			NewStoredList: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} },
		},
		New:     func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscaler{} },
		NewList: func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscalerList{} },
		Default: func(obj runtime.Object) {
			// v1's own defaulting: the CPU target comes with the conversion.
			if h := obj.(*autoscalingv1.HorizontalPodAutoscaler); h.Spec.MinReplicas == nil {
				one := int32(1)
				h.Spec.MinReplicas = &one
			}
		},
		PrepareForCreate: func(obj runtime.Object) {
			h := obj.(*autoscalingv1.HorizontalPodAutoscaler)
			h.Status = autoscalingv1.HorizontalPodAutoscalerStatus{}
			h.Annotations = withoutStatusAnnotations(h.Annotations, nil)
			h.Generation = 1
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			h, o := obj.(*autoscalingv1.HorizontalPodAutoscaler), old.(*autoscalingv1.HorizontalPodAutoscaler)
			h.Status = o.Status
			h.Annotations = withoutStatusAnnotations(h.Annotations, o.Annotations)
			if !apiequality.Semantic.DeepEqual(toV2(h).Spec, toV2(o).Spec) {
				h.Generation = o.Generation + 1
			}
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			h := toV2(obj)
			return autoscalingvalidation.ValidateHorizontalPodAutoscaler(h, autoscalingvalidation.OptionsFor(h, nil))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			h, o := toV2(obj), toV2(old)
			return autoscalingvalidation.ValidateHorizontalPodAutoscaler(h, autoscalingvalidation.OptionsFor(h, o))
		},
		Subresources: map[string]*registry.Subresource{
			"status": {
				PrepareForUpdate: func(obj, old runtime.Object) {
					h, o := obj.(*autoscalingv1.HorizontalPodAutoscaler), old.(*autoscalingv1.HorizontalPodAutoscaler)
					h.Spec = o.Spec
					// The spec's annotation (other metrics, behavior) is
					// the old object's; the status' are the update's.
					h.Annotations = withSpecAnnotationsOf(h.Annotations, o.Annotations)
				},
				ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList {
					return autoscalingvalidation.ValidateStatusUpdate(&toV2(obj).Status)
				},
			},
		},
	}
}

// statusAnnotations are the round-trip annotations that carry a v1 HPA's
// status; the others carry its spec.
var statusAnnotations = []string{autoscalingconversion.MetricStatusesAnnotation, autoscalingconversion.HorizontalPodAutoscalerConditionsAnnotation}

// withoutStatusAnnotations keeps old's status annotations in place of
// annots' (none on create): a write of the main resource does not change
// the status, whichever way it is encoded.
func withoutStatusAnnotations(annots, old map[string]string) map[string]string {
	out := maps.Clone(annots)
	for _, k := range statusAnnotations {
		delete(out, k)
		if v, ok := old[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// withSpecAnnotationsOf keeps old's spec annotations in place of annots'.
func withSpecAnnotationsOf(annots, old map[string]string) map[string]string {
	out := maps.Clone(annots)
	for _, k := range []string{autoscalingconversion.MetricSpecsAnnotation, autoscalingconversion.BehaviorSpecsAnnotation,
		autoscalingconversion.ToleranceScaleDownAnnotation, autoscalingconversion.ToleranceScaleUpAnnotation} {
		delete(out, k)
		if v, ok := old[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
