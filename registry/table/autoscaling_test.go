package table_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/registry/table"
)

// TestHorizontalPodAutoscalerCells compares the cells of autoscalers with
// what upstream's printHorizontalPodAutoscaler prints for them.
func TestHorizontalPodAutoscalerCells(t *testing.T) {
	ref := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	cpu := func(target int32) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(target)}}}
	}
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))}}}
	external := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("30"))}}}
	tests := []struct {
		name string
		hpa  autoscalingv2.HorizontalPodAutoscaler
		want []any
	}{
		{
			name: "cpu not yet measured",
			hpa:  autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta("web"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MinReplicas: ptr.To[int32](1), MaxReplicas: 10, Metrics: []autoscalingv2.MetricSpec{cpu(80)}}},
			want: []any{"web", "Deployment/web", "cpu: <unknown>/80%", "1", int64(10), int64(0), "3d"},
		},
		{
			name: "cpu measured",
			hpa: autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta("web"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MaxReplicas: 10, Metrics: []autoscalingv2.MetricSpec{cpu(50)}},
				Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 3, CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
					Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](120)}}}}}},
			want: []any{"web", "Deployment/web", "cpu: 120%/50%", "<unset>", int64(10), int64(3), "3d"},
		},
		{
			name: "three metrics show two and how many more",
			hpa:  autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta("web"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MinReplicas: ptr.To[int32](2), MaxReplicas: 4, Metrics: []autoscalingv2.MetricSpec{pods, external, cpu(80)}}},
			want: []any{"web", "Deployment/web", "<unknown>/10, <unknown>/30 (avg) + 1 more...", "2", int64(4), int64(0), "3d"},
		},
		{
			name: "no metrics",
			hpa:  autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta("web"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: ref, MaxReplicas: 4}},
			want: []any{"web", "Deployment/web", "<none>", "<unset>", int64(4), int64(0), "3d"},
		},
	}
	c := table.New(table.Options{Now: func() time.Time { return now }})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := c.Convert(&tc.hpa, table.ConvertOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, tbl.Rows[0].Cells); diff != "" {
				t.Errorf("cells (-upstream +kite):\n%s", diff)
			}
			var names []string
			for _, d := range tbl.ColumnDefinitions {
				names = append(names, d.Name)
			}
			if diff := cmp.Diff([]string{"Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"}, names); diff != "" {
				t.Errorf("columns (-upstream +kite):\n%s", diff)
			}
		})
	}
}
