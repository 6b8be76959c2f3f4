package api_test

import (
	"os/exec"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestHPAsAreServedAsV1AndV2: autoscaling/v1 HorizontalPodAutoscalers are
// the v2 ones, converted as upstream converts them: what v1 cannot say
// travels in annotations and survives a v1 update, and v1's errors name
// v2's fields.
func TestHPAsAreServedAsV1AndV2(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, cs)
	v1c, v2c := cs.AutoscalingV1().HorizontalPodAutoscalers(ns), cs.AutoscalingV2().HorizontalPodAutoscalers(ns)
	target := autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"}

	t.Run("a v1 CPU target is a v2 metric", func(t *testing.T) {
		if _, err := v1c.Create(t.Context(), &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "cpu"},
			Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: target, MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](50)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := v2c.Get(t.Context(), "cpu", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *got.Spec.MinReplicas != 1 || len(got.Spec.Metrics) != 1 || got.Spec.Metrics[0].Resource == nil ||
			got.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU || *got.Spec.Metrics[0].Resource.Target.AverageUtilization != 50 {
			t.Errorf("v2 spec %+v, want minReplicas 1 and CPU utilization 50", got.Spec)
		}
		if len(got.Annotations) != 0 {
			t.Errorf("v2 annotations %v, want none", got.Annotations)
		}
	})

	t.Run("what v1 cannot say survives a v1 update", func(t *testing.T) {
		memory := resource.MustParse("100Mi")
		if _, err := v2c.Create(t.Context(), &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "mixed"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(target), MaxReplicas: 5,
				Metrics: []autoscalingv2.MetricSpec{
					{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
						Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &memory}}},
					{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
						Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)}}},
				},
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}},
			}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		v1, err := v1c.Get(t.Context(), "mixed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v1.Spec.TargetCPUUtilizationPercentage == nil || *v1.Spec.TargetCPUUtilizationPercentage != 70 {
			t.Errorf("v1 CPU target %v, want 70", v1.Spec.TargetCPUUtilizationPercentage)
		}
		if !strings.Contains(v1.Annotations["autoscaling.alpha.kubernetes.io/metrics"], `"memory"`) ||
			!strings.Contains(v1.Annotations["autoscaling.alpha.kubernetes.io/behavior"], `"StabilizationWindowSeconds":60`) {
			t.Errorf("v1 annotations %v, want the memory metric and the behavior", v1.Annotations)
		}
		v1.Spec.MaxReplicas = 8
		if _, err := v1c.Update(t.Context(), v1, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		v2, err := v2c.Get(t.Context(), "mixed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v2.Spec.MaxReplicas != 8 || len(v2.Spec.Metrics) != 2 || v2.Spec.Metrics[0].Resource.Name != corev1.ResourceMemory ||
			v2.Spec.Behavior == nil || *v2.Spec.Behavior.ScaleDown.StabilizationWindowSeconds != 60 {
			t.Errorf("after a v1 update, v2 spec %+v", v2.Spec)
		}
		if v2.Generation != 2 {
			t.Errorf("generation %d after one spec change, want 2", v2.Generation)
		}
	})

	t.Run("status written in v2 reads in v1", func(t *testing.T) {
		v2, err := v2c.Get(t.Context(), "cpu", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v2.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 3,
			CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](90)}}}},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound", LastTransitionTime: metav1.Now()}}}
		if _, err := v2c.UpdateStatus(t.Context(), v2, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		v1, err := v1c.Get(t.Context(), "cpu", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v1.Status.CurrentCPUUtilizationPercentage == nil || *v1.Status.CurrentCPUUtilizationPercentage != 90 || v1.Status.DesiredReplicas != 3 ||
			!strings.Contains(v1.Annotations["autoscaling.alpha.kubernetes.io/conditions"], "ValidMetricFound") {
			t.Errorf("v1 status %+v annotations %v", v1.Status, v1.Annotations)
		}
		// A v1 write of the spec leaves the status alone.
		v1.Spec.MaxReplicas = 6
		if _, err := v1c.Update(t.Context(), v1, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		v2, err = v2c.Get(t.Context(), "cpu", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(v2.Status.Conditions) != 1 || v2.Status.DesiredReplicas != 3 {
			t.Errorf("status after a v1 spec update %+v", v2.Status)
		}
	})

	t.Run("v1 errors name v2's fields, as upstream's", func(t *testing.T) {
		_, err := v1c.Create(t.Context(), &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec: autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: target, MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](0)}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.metrics[0].resource.target.averageUtilization") {
			t.Errorf("err %v, want 422 on spec.metrics[0].resource.target.averageUtilization", err)
		}
	})

	t.Run("kubectl prints v1 as v2", func(t *testing.T) {
		out, err := exec.CommandContext(t.Context(), "kubectl", "--kubeconfig", shared.KubeconfigPath(), "get", "horizontalpodautoscalers.v1.autoscaling", "-n", ns, "cpu").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl: %v: %s", err, out)
		}
		if !strings.Contains(string(out), "cpu: 90%/50%") || !strings.Contains(string(out), "Deployment/web") {
			t.Errorf("kubectl get hpa.v1:\n%s", out)
		}
	})
}
