// Package defaults sets autoscaling/v2 defaults as upstream's
// pkg/apis/autoscaling/v2/defaults.go does.
package defaults

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// DefaultCPUUtilization is upstream's autoscaling.DefaultCPUUtilization:
// the target of an autoscaler that names no metric.
const DefaultCPUUtilization = 80

// HorizontalPodAutoscaler is upstream's SetDefaults_HorizontalPodAutoscaler:
// minReplicas 1, 80% average CPU utilization when no metric is given, and
// a behavior that names any rule filled with the rules' defaults.
func HorizontalPodAutoscaler(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	if hpa.Spec.MinReplicas == nil {
		one := int32(1)
		hpa.Spec.MinReplicas = &one
	}
	if len(hpa.Spec.Metrics) == 0 {
		utilization := int32(DefaultCPUUtilization)
		hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name:   corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &utilization},
			},
		}}
	}
	if b := hpa.Spec.Behavior; b != nil {
		b.ScaleUp = ScaleUpRules(b.ScaleUp)
		b.ScaleDown = ScaleDownRules(b.ScaleDown)
	}
}

// ScaleUpRules is upstream's GenerateHPAScaleUpRules: rules with every
// unset field taken from the scale-up defaults (no stabilization, the
// larger of +4 pods or +100% per 15 s). The HPA controller uses it too
// for an autoscaler without behavior.
func ScaleUpRules(rules *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	window, selectMax := int32(0), autoscalingv2.MaxChangePolicySelect
	return mergeRules(rules, &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: &window,
		SelectPolicy:               &selectMax,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	})
}

// ScaleDownRules is upstream's GenerateHPAScaleDownRules: as ScaleUpRules
// with -100% per 15 s, but the stabilization window stays unset, as
// upstream's: the controller's --horizontal-pod-autoscaler-downscale-
// stabilization (300 s) applies then.
func ScaleDownRules(rules *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	selectMax := autoscalingv2.MaxChangePolicySelect
	return mergeRules(rules, &autoscalingv2.HPAScalingRules{
		SelectPolicy: &selectMax,
		Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	})
}

// mergeRules is upstream's copyHPAScalingRules: from's set fields over
// the defaults in to.
func mergeRules(from, to *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return to
	}
	if from.SelectPolicy != nil {
		to.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		to.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		to.Policies = from.Policies
	}
	if from.Tolerance != nil {
		to.Tolerance = from.Tolerance
	}
	return to
}
