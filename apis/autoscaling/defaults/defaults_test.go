package defaults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestHorizontalPodAutoscalerDefaults checks upstream's v2 defaults.
func TestHorizontalPodAutoscalerDefaults(t *testing.T) {
	maxPolicy, minPolicy := autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect
	cpu80 := []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}}
	upDefault := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: &maxPolicy, Policies: []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}, {Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}
	tests := []struct {
		name string
		in   autoscalingv2.HorizontalPodAutoscalerSpec
		want autoscalingv2.HorizontalPodAutoscalerSpec
	}{
		{"empty: minReplicas 1 and 80% CPU, no behavior",
			autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3},
			autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3, MinReplicas: ptr.To[int32](1), Metrics: cpu80}},
		{"a scale-down rule fills both directions, scale-down window left unset",
			autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3, MinReplicas: ptr.To[int32](2), Metrics: cpu80,
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: &minPolicy}}},
			autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3, MinReplicas: ptr.To[int32](2), Metrics: cpu80,
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: upDefault, ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: &minPolicy,
					Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &autoscalingv2.HorizontalPodAutoscaler{Spec: tc.in}
			HorizontalPodAutoscaler(h)
			if diff := cmp.Diff(tc.want, h.Spec); diff != "" {
				t.Errorf("spec (-upstream +kite):\n%s", diff)
			}
		})
	}
}
