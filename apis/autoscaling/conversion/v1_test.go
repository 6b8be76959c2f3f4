package conversion

import (
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func hpa(metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Annotations: map[string]string{"keep": "me"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    ptr.To[int32](2), MaxReplicas: 10, Metrics: metrics,
		},
	}
}

func TestV2SurvivesARoundTripThroughV1(t *testing.T) {
	q := resource.MustParse
	memory := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(q("100Mi"))}}}
	pods := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(q("10"))}}}
	object := autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
		DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: "Ingress", Name: "main", APIVersion: "networking.k8s.io/v1"},
		Metric:          autoscalingv2.MetricIdentifier{Name: "rps"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(q("2k"))}}}
	external := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"q": "jobs"}}},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(q("30"))}}}
	container := autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
		Name: corev1.ResourceCPU, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}}}
	withStatus := hpa(cpuUtilization(50), memory)
	withStatus.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: ptr.To[int64](3), CurrentReplicas: 2, DesiredReplicas: 3,
		CurrentMetrics: []autoscalingv2.MetricStatus{
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
				Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](70), AverageValue: ptr.To(q("350m"))}}},
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceMemory,
				Current: autoscalingv2.MetricValueStatus{AverageValue: ptr.To(q("80Mi"))}}},
		},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", Message: "recommended size matches current size",
			LastTransitionTime: metav1.Unix(1000, 0)}},
	}
	withBehavior := hpa(cpuUtilization(50))
	withBehavior.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect), Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](300), Tolerance: ptr.To(q("50m"))},
	}
	for _, tc := range []struct {
		name        string
		in          *autoscalingv2.HorizontalPodAutoscaler
		wantCPU     *int32
		wantAnnots  []string
		wantMissing []string
	}{
		{"the CPU target alone is v1's field", hpa(cpuUtilization(50)), ptr.To[int32](50), nil, []string{MetricSpecsAnnotation}},
		{"other metrics go in the annotation, in their order, the CPU target last", hpa(memory, pods, cpuUtilization(50), object, external, container), ptr.To[int32](50), []string{MetricSpecsAnnotation}, nil},
		{"no CPU target", hpa(memory), nil, []string{MetricSpecsAnnotation}, nil},
		{"status and conditions", withStatus, ptr.To[int32](50), []string{MetricStatusesAnnotation, HorizontalPodAutoscalerConditionsAnnotation}, nil},
		{"behavior", withBehavior, ptr.To[int32](50), []string{BehaviorSpecsAnnotation}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v1, err := ToV1(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(v1.Spec.TargetCPUUtilizationPercentage, tc.wantCPU) {
				t.Errorf("targetCPUUtilizationPercentage %v, want %v", v1.Spec.TargetCPUUtilizationPercentage, tc.wantCPU)
			}
			for _, a := range tc.wantAnnots {
				if _, ok := v1.Annotations[a]; !ok {
					t.Errorf("no annotation %s: %v", a, v1.Annotations)
				}
			}
			for _, a := range tc.wantMissing {
				if _, ok := v1.Annotations[a]; ok {
					t.Errorf("annotation %s: %v", a, v1.Annotations)
				}
			}
			back, err := ToV2(v1)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.in
			if want.Spec.Metrics != nil && len(want.Spec.Metrics) > 1 {
				// v1 keeps the CPU target out of the annotation: it comes
				// back last, as upstream's.
				want = want.DeepCopy()
				var cpu, other []autoscalingv2.MetricSpec
				for _, m := range want.Spec.Metrics {
					if isCPUUtilization(m) {
						cpu = append(cpu, m)
					} else {
						other = append(other, m)
					}
				}
				want.Spec.Metrics = append(other, cpu...)
			}
			if !apiequality.Semantic.DeepEqual(back, want) {
				t.Errorf("round trip changed the HPA:\n got %+v\nwant %+v", back, want)
			}
			if tc.in.Annotations["keep"] != "me" || tc.in.Annotations[MetricSpecsAnnotation] != "" {
				t.Errorf("the conversion changed its input's annotations: %v", tc.in.Annotations)
			}
		})
	}
}

func TestV1WithoutATargetGetsTheDefaultCPUTarget(t *testing.T) {
	v2, err := ToV2(&autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(v2.Spec.Metrics) != 1 || !isCPUUtilization(v2.Spec.Metrics[0]) || *v2.Spec.Metrics[0].Resource.Target.AverageUtilization != DefaultCPUUtilization {
		t.Errorf("metrics %+v, want CPU utilization %d", v2.Spec.Metrics, DefaultCPUUtilization)
	}
}

func TestBehaviorAnnotationIsUpstreamsInternalJSON(t *testing.T) {
	in := hpa(cpuUtilization(50))
	in.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}}
	v1, err := ToV1(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":null,"Policies":null,"Tolerance":null}}`
	if got := v1.Annotations[BehaviorSpecsAnnotation]; got != want {
		t.Errorf("behavior annotation\n got %s\nwant %s", got, want)
	}
}

func TestRoundTripAnnotationsFromAClientAreNotStored(t *testing.T) {
	v2, err := ToV2(&autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		MetricSpecsAnnotation: "not json", ToleranceScaleUpAnnotation: "1", "other": "x"}}, Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for k := range v2.Annotations {
		if strings.HasPrefix(k, "autoscaling.alpha.kubernetes.io/") {
			t.Errorf("stored annotation %s", k)
		}
	}
	if v2.Annotations["other"] != "x" {
		t.Errorf("annotations %v, want the others kept", v2.Annotations)
	}
}
