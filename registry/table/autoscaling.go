package table

import (
	"fmt"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	autoscalingconversion "github.com/kite-project/kite/apis/autoscaling/conversion"
)

// registerAutoscaling adds the HorizontalPodAutoscaler printer (upstream's
// printHorizontalPodAutoscaler).
func registerAutoscaling(c *Convertor) {
	c.register(horizontalPodAutoscalerPrinter, &autoscalingv2.HorizontalPodAutoscaler{}, &autoscalingv2.HorizontalPodAutoscalerList{})
	c.register(horizontalPodAutoscalerV1Printer, &autoscalingv1.HorizontalPodAutoscaler{}, &autoscalingv1.HorizontalPodAutoscalerList{})
}

// horizontalPodAutoscalerV1Printer prints autoscaling/v1 HPAs as the v2
// ones they convert to: upstream prints its internal type, the same for
// both versions.
var horizontalPodAutoscalerV1Printer = &printer{
	columns: horizontalPodAutoscalerPrinter.columns,
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		v2, err := autoscalingconversion.ToV2(obj.(*autoscalingv1.HorizontalPodAutoscaler))
		if err != nil {
			return nil, nil
		}
		return horizontalPodAutoscalerPrinter.row(v2, now)
	},
}

var horizontalPodAutoscalerPrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Reference", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]},
		{Name: "Targets", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]},
		{Name: "MinPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]},
		{Name: "MaxPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]},
		{Name: "Replicas", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]},
		ageColumn,
	},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		h := obj.(*autoscalingv2.HorizontalPodAutoscaler)
		minPods := "<unset>"
		if h.Spec.MinReplicas != nil {
			minPods = fmt.Sprint(*h.Spec.MinReplicas)
		}
		return []any{h.Name, h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name, hpaTargets(h.Spec.Metrics, h.Status.CurrentMetrics),
			minPods, int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas), age(h.CreationTimestamp, now)}, nil
	},
}

// hpaTargets is upstream's formatHPAMetrics: current/target of the first
// two metrics ("<unknown>" before the controller has measured), then how
// many more there are.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	const shown = 2
	var list []string
	for i, spec := range specs {
		var st autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = statuses[i]
		}
		list = append(list, hpaTarget(&spec, &st))
	}
	if len(list) > shown {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:shown], ", "), len(list)-shown)
	}
	return strings.Join(list, ", ")
}

func hpaTarget(spec *autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	switch {
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st.External != nil {
			cur = &st.External.Current
		}
		return valueTarget(spec.External.Target, cur)
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		current := "<unknown>"
		if st.Pods != nil {
			current = quantityString(st.Pods.Current.AverageValue)
		}
		return current + "/" + quantityString(spec.Pods.Target.AverageValue)
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st.Object != nil {
			cur = &st.Object.Current
		}
		return valueTarget(spec.Object.Target, cur)
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st.Resource != nil {
			cur = &st.Resource.Current
		}
		return string(spec.Resource.Name) + ": " + resourceTarget(spec.Resource.Target, cur)
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st.ContainerResource != nil {
			cur = &st.ContainerResource.Current
		}
		return string(spec.ContainerResource.Name) + ": " + resourceTarget(spec.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

// valueTarget is an object or external metric's cell: an average value
// marked "(avg)", else the total value.
func valueTarget(t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if t.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s (avg)", current, t.AverageValue.String())
	}
	if cur != nil {
		current = quantityString(cur.Value)
	}
	return current + "/" + quantityString(t.Value)
}

// resourceTarget is a resource metric's cell: average values, or
// utilizations in percent.
func resourceTarget(t autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if t.AverageValue != nil {
		if cur != nil {
			current = quantityString(cur.AverageValue)
		}
		return current + "/" + t.AverageValue.String()
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
	}
	target := "<auto>"
	if t.AverageUtilization != nil {
		target = fmt.Sprintf("%d%%", *t.AverageUtilization)
	}
	return current + "/" + target
}

// quantityString prints a quantity, a missing one as upstream's zero
// Quantity prints.
func quantityString(q *resource.Quantity) string {
	if q == nil {
		return "0"
	}
	return q.String()
}
