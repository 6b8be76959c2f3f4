package builtin

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

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
