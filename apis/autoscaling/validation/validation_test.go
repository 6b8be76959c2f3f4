package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func cpuMetric(target int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)}}}
}

// TestValidateHorizontalPodAutoscaler checks upstream's field paths and
// messages.
func TestValidateHorizontalPodAutoscaler(t *testing.T) {
	ref := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	valid := func(mod func(*autoscalingv2.HorizontalPodAutoscalerSpec)) autoscalingv2.HorizontalPodAutoscalerSpec {
		s := autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MinReplicas: ptr.To[int32](1), MaxReplicas: 5, Metrics: []autoscalingv2.MetricSpec{cpuMetric(80)}}
		mod(&s)
		return s
	}
	tests := []struct {
		name string
		spec autoscalingv2.HorizontalPodAutoscalerSpec
		want []string
	}{
		{"valid", valid(func(*autoscalingv2.HorizontalPodAutoscalerSpec) {}), nil},
		{"minReplicas 0 without object or external metric", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) { s.MinReplicas = ptr.To[int32](0) }),
			[]string{"spec.minReplicas: Invalid value: 0: must be greater than or equal to 1", "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas"}},
		{"maxReplicas unset", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) { s.MaxReplicas = 0 }),
			[]string{"spec.maxReplicas: Required value: must be set and greater than 0", "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`"}},
		{"max below min", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) { s.MinReplicas = ptr.To[int32](6) }),
			[]string{"spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`"}},
		{"target without group", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) { s.ScaleTargetRef.APIVersion = "v1" }),
			[]string{`spec.scaleTargetRef.apiVersion: Invalid value: "v1": apiVersion must specify API group`}},
		{"replication controller in the core group", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) {
			s.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "ReplicationController", Name: "rc"}
		}), nil},
		{"target without kind and name", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) {
			s.ScaleTargetRef.Kind, s.ScaleTargetRef.Name = "", ""
		}),
			[]string{"spec.scaleTargetRef.kind: Required value", "spec.scaleTargetRef.name: Required value"}},
		{"utilization and value both", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) {
			s.Metrics[0].Resource.Target.AverageValue = ptr.To(resource.MustParse("100m"))
		}), []string{"spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw value and a target utilization"}},
		{"zero utilization", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) { s.Metrics[0] = cpuMetric(0) }),
			[]string{"spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"}},
		{"type without its source", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) {
			s.Metrics[0].Type = autoscalingv2.PodsMetricSourceType
		}), []string{"spec.metrics[0].pods: Required value: must populate information for the given metric source"}},
		{"unknown type", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) { s.Metrics[0].Type = "Magic" }),
			[]string{`spec.metrics[0].type: Unsupported value: "Magic": supported values: "ContainerResource", "External", "Object", "Pods", "Resource"`,
				`spec.metrics[0].type: Unsupported value: "Magic": supported values: "ContainerResource", "External", "Object", "Pods", "Resource"`}},
		{"bad behavior", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) {
			s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To[int32](4000), SelectPolicy: ptr.To(autoscalingv2.ScalingPolicySelect("Avg")),
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: "Nodes", Value: 0, PeriodSeconds: 2000}}}}
		}), []string{
			"spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
			`spec.behavior.scaleDown.selectPolicy: Unsupported value: "Avg": supported values: "Disabled", "Max", "Min"`,
			`spec.behavior.scaleDown.policies[0].type: Unsupported value: "Nodes": supported values: "Percent", "Pods"`,
			"spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
			"spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 2000: must be less than or equal to 1800",
		}},
		{"rules without policies", valid(func(s *autoscalingv2.HorizontalPodAutoscalerSpec) {
			s.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{}}
		}), []string{"spec.behavior.scaleUp.policies: Required value: must specify at least one Policy"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &autoscalingv2.HorizontalPodAutoscaler{Spec: tc.spec}
			var got []string
			for _, e := range ValidateHorizontalPodAutoscaler(h, OptionsFor(h, nil)) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-upstream +kite):\n%s", diff)
			}
		})
	}
}

// TestUpdateKeepsWhatTheStoredObjectHad checks that an update is not
// refused for what an older object already had: minReplicas 0, a target
// apiVersion without a group.
func TestUpdateKeepsWhatTheStoredObjectHad(t *testing.T) {
	old := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Deployment", Name: "web"},
		MinReplicas:    ptr.To[int32](0), MaxReplicas: 3,
		Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("5"))}}}}}}
	updated := old.DeepCopy()
	updated.Spec.MaxReplicas = 4
	if errs := ValidateHorizontalPodAutoscaler(updated, OptionsFor(updated, old)); len(errs) != 0 {
		t.Errorf("update: %v", errs)
	}
	if errs := ValidateHorizontalPodAutoscaler(updated, OptionsFor(updated, nil)); len(errs) != 2 {
		t.Errorf("create: %v, want the minReplicas and apiVersion errors", errs)
	}
}
