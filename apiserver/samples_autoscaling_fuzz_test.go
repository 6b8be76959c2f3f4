package apiserver_test

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// autoscalingSample is the sample of a HorizontalPodAutoscaler: one that
// scales a Deployment on CPU, with a scale-down behavior (in v1: a CPU
// target only); nil for other kinds.
func autoscalingSample(kind schema.GroupVersionKind, meta metav1.ObjectMeta) runtime.Object {
	if kind.GroupKind() != (schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}) {
		return nil
	}
	if kind.Version == "v1" {
		return &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: meta, Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](60),
		}}
	}
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta, Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MinReplicas:    ptr.To[int32](1),
		MaxReplicas:    5,
		Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: v1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}}}},
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](60),
			Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 30}}}},
	}}
}
