// Package conversion converts HorizontalPodAutoscalers between
// autoscaling/v2 (what Kite stores, as kube-apiserver 1.37 does) and
// autoscaling/v1, as upstream's pkg/apis/autoscaling/v1/conversion.go does
// through its internal type: v1 has room for one CPU utilization target
// only, so every other metric, the current metrics, the conditions and the
// behavior travel in the autoscaling.alpha.kubernetes.io annotations, and
// come back from them.
package conversion

import (
	"encoding/json"
	"maps"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The round-trip annotations, upstream's names.
const (
	MetricSpecsAnnotation                       = "autoscaling.alpha.kubernetes.io/metrics"
	MetricStatusesAnnotation                    = "autoscaling.alpha.kubernetes.io/current-metrics"
	HorizontalPodAutoscalerConditionsAnnotation = "autoscaling.alpha.kubernetes.io/conditions"
	BehaviorSpecsAnnotation                     = "autoscaling.alpha.kubernetes.io/behavior"
	ToleranceScaleDownAnnotation                = "autoscaling.alpha.kubernetes.io/scale-down-tolerance"
	ToleranceScaleUpAnnotation                  = "autoscaling.alpha.kubernetes.io/scale-up-tolerance"
)

// DefaultCPUUtilization is the target a v1 HPA without one gets.
const DefaultCPUUtilization = 80

// dropRoundTripAnnotations returns the annotations without the round-trip
// ones, copied when it removed any.
func dropRoundTripAnnotations(in map[string]string) map[string]string {
	keys := []string{MetricSpecsAnnotation, BehaviorSpecsAnnotation, ToleranceScaleDownAnnotation, ToleranceScaleUpAnnotation, MetricStatusesAnnotation, HorizontalPodAutoscalerConditionsAnnotation}
	found := false
	for _, k := range keys {
		_, ok := in[k]
		found = found || ok
	}
	if !found {
		return in
	}
	out := maps.Clone(in)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil
}

// ToV1 converts a stored v2 HPA into v1.
func ToV1(in *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv1.HorizontalPodAutoscaler, error) {
	out := &autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   in.TypeMeta,
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas,
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime:      in.Status.LastScaleTime,
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	out.APIVersion, out.Kind = "", ""
	out.Annotations = dropRoundTripAnnotations(out.Annotations)
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) {
			u := *m.Resource.Target.AverageUtilization
			out.Spec.TargetCPUUtilizationPercentage = &u
			break
		}
	}
	for _, m := range in.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			u := *m.Resource.Current.AverageUtilization
			out.Status.CurrentCPUUtilizationPercentage = &u
		}
	}
	otherMetrics := make([]autoscalingv1.MetricSpec, 0, len(in.Spec.Metrics))
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) {
			continue
		}
		otherMetrics = append(otherMetrics, metricSpecToV1(m))
	}
	// The status even when it maps to the CPU utilization field, for its
	// raw value.
	currentMetrics := make([]autoscalingv1.MetricStatus, len(in.Status.CurrentMetrics))
	for i, m := range in.Status.CurrentMetrics {
		currentMetrics[i] = metricStatusToV1(m)
	}
	conditions := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(in.Status.Conditions))
	for i, c := range in.Status.Conditions {
		conditions[i] = autoscalingv1.HorizontalPodAutoscalerCondition{
			Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		}
	}
	set := func(key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		// out's annotations are its own (a deep copy of in's).
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[key] = string(b)
		return nil
	}
	if len(otherMetrics) > 0 {
		if err := set(MetricSpecsAnnotation, otherMetrics); err != nil {
			return nil, err
		}
	}
	if len(in.Status.CurrentMetrics) > 0 {
		if err := set(MetricStatusesAnnotation, currentMetrics); err != nil {
			return nil, err
		}
	}
	if in.Spec.Behavior != nil {
		// Upstream marshals its internal type, whose fields have no JSON
		// tags: the keys are the Go field names.
		if err := set(BehaviorSpecsAnnotation, behaviorToInternal(in.Spec.Behavior)); err != nil {
			return nil, err
		}
	}
	if len(in.Status.Conditions) > 0 {
		if err := set(HorizontalPodAutoscalerConditionsAnnotation, conditions); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ToV2 converts a v1 HPA into the stored v2 one.
func ToV2(in *autoscalingv1.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	out := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas,
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime:      in.Status.LastScaleTime,
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	if in.Spec.TargetCPUUtilizationPercentage != nil {
		u := *in.Spec.TargetCPUUtilizationPercentage
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(u)}
	}
	if in.Status.CurrentCPUUtilizationPercentage != nil {
		u := *in.Status.CurrentCPUUtilizationPercentage
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &u}}}}
	}
	if enc, ok := in.Annotations[MetricSpecsAnnotation]; ok {
		var other []autoscalingv1.MetricSpec
		if err := json.Unmarshal([]byte(enc), &other); err == nil {
			// The CPU target of the spec goes after the others.
			metrics := make([]autoscalingv2.MetricSpec, 0, len(other)+1)
			for _, m := range other {
				metrics = append(metrics, metricSpecToV2(m))
			}
			if out.Spec.Metrics != nil {
				metrics = append(metrics, out.Spec.Metrics[0])
			}
			out.Spec.Metrics = metrics
		}
	}
	if enc, ok := in.Annotations[BehaviorSpecsAnnotation]; ok {
		var b internalBehavior
		if err := json.Unmarshal([]byte(enc), &b); err == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			out.Spec.Behavior = b.toV2()
		}
	}
	if enc, ok := in.Annotations[MetricStatusesAnnotation]; ok {
		// These say more than the CPU utilization field.
		var current []autoscalingv1.MetricStatus
		if err := json.Unmarshal([]byte(enc), &current); err == nil {
			out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, len(current))
			for i, m := range current {
				out.Status.CurrentMetrics[i] = metricStatusToV2(m)
			}
		}
	}
	// v1's implicit default, applied explicitly where every metric is
	// known, as upstream.
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(DefaultCPUUtilization)}
	}
	if enc, ok := in.Annotations[HorizontalPodAutoscalerConditionsAnnotation]; ok {
		var conditions []autoscalingv1.HorizontalPodAutoscalerCondition
		if err := json.Unmarshal([]byte(enc), &conditions); err == nil {
			out.Status.Conditions = make([]autoscalingv2.HorizontalPodAutoscalerCondition, len(conditions))
			for i, c := range conditions {
				out.Status.Conditions[i] = autoscalingv2.HorizontalPodAutoscalerCondition{
					Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
					LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
				}
			}
		}
	}
	out.Annotations = dropRoundTripAnnotations(out.Annotations)
	return out, nil
}

func cpuUtilization(u int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &u}}}
}

func metricSpecToV1(in autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		o := &autoscalingv1.ObjectMetricSource{
			AverageValue: s.Target.AverageValue,
			Target:       autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName:   s.Metric.Name, Selector: s.Metric.Selector,
		}
		if s.Target.Value != nil {
			o.TargetValue = *s.Target.Value
		}
		out.Object = o
	}
	if s := in.Pods; s != nil {
		p := &autoscalingv1.PodsMetricSource{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Target.AverageValue != nil {
			p.TargetAverageValue = *s.Target.AverageValue
		}
		out.Pods = p
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: s.Name, TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{Name: s.Name, Container: s.Container,
			TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue}
	}
	if s := in.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricSource{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector,
			TargetValue: s.Target.Value, TargetAverageValue: s.Target.AverageValue}
	}
	return out
}

func metricSpecToV2(in autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		o := &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Target:          autoscalingv2.MetricTarget{AverageValue: s.AverageValue},
		}
		value := s.TargetValue
		if s.AverageValue == nil {
			o.Target.Type, o.Target.Value = autoscalingv2.ValueMetricType, &value
		} else {
			o.Target.Type = autoscalingv2.AverageValueMetricType
			// v1 cannot omit the value and says "0", which would fail
			// validation on the way back: only a non-zero one is kept.
			if !value.IsZero() {
				o.Target.Value = &value
			}
		}
		out.Object = o
	}
	if s := in.Pods; s != nil {
		avg := s.TargetAverageValue
		out.Pods = &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &avg}}
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: s.Name, Target: target(s.TargetAverageUtilization, s.TargetAverageValue)}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: s.Name, Container: s.Container,
			Target: target(s.TargetAverageUtilization, s.TargetAverageValue)}
	}
	if s := in.External; s != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: s.TargetValue, AverageValue: s.TargetAverageValue}
		if s.TargetValue == nil {
			t.Type = autoscalingv2.AverageValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector}, Target: t}
	}
	return out
}

// target is a resource target: Utilization when a utilization is given,
// else AverageValue.
func target(utilization *int32, averageValue *resource.Quantity) autoscalingv2.MetricTarget {
	t := autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: utilization, AverageValue: averageValue}
	if utilization == nil {
		t.Type = autoscalingv2.AverageValueMetricType
	}
	return t
}

func metricStatusToV1(in autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		o := &autoscalingv1.ObjectMetricStatus{Target: autoscalingv1.CrossVersionObjectReference(s.DescribedObject), MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Current.Value != nil {
			o.CurrentValue = *s.Current.Value
		}
		if s.Current.AverageValue != nil {
			avg := *s.Current.AverageValue
			o.AverageValue = &avg
		}
		out.Object = o
	}
	if s := in.Pods; s != nil {
		p := &autoscalingv1.PodsMetricStatus{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Current.AverageValue != nil {
			p.CurrentAverageValue = *s.Current.AverageValue
		}
		out.Pods = p
	}
	if s := in.Resource; s != nil {
		r := &autoscalingv1.ResourceMetricStatus{Name: s.Name, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			r.CurrentAverageValue = *s.Current.AverageValue
		}
		out.Resource = r
	}
	if s := in.ContainerResource; s != nil {
		r := &autoscalingv1.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			r.CurrentAverageValue = *s.Current.AverageValue
		}
		out.ContainerResource = r
	}
	if s := in.External; s != nil {
		e := &autoscalingv1.ExternalMetricStatus{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector, CurrentAverageValue: s.Current.AverageValue}
		if s.Current.Value != nil {
			e.CurrentValue = *s.Current.Value
		}
		out.External = e
	}
	return out
}

func metricStatusToV2(in autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		value := s.CurrentValue
		out.Object = &autoscalingv2.ObjectMetricStatus{DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Current: autoscalingv2.MetricValueStatus{Value: &value, AverageValue: s.AverageValue}}
	}
	if s := in.Pods; s != nil {
		avg := s.CurrentAverageValue
		out.Pods = &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: &avg}}
	}
	if s := in.Resource; s != nil {
		avg := s.CurrentAverageValue
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: s.Name, Current: autoscalingv2.MetricValueStatus{AverageValue: &avg, AverageUtilization: s.CurrentAverageUtilization}}
	}
	if s := in.ContainerResource; s != nil {
		avg := s.CurrentAverageValue
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container,
			Current: autoscalingv2.MetricValueStatus{AverageValue: &avg, AverageUtilization: s.CurrentAverageUtilization}}
	}
	if s := in.External; s != nil {
		value := s.CurrentValue
		out.External = &autoscalingv2.ExternalMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: &value, AverageValue: s.CurrentAverageValue}}
	}
	return out
}

// internalBehavior and its parts mirror upstream's internal types, whose
// JSON (Go field names, no omitempty) is what the behavior annotation
// holds.
type internalBehavior struct {
	ScaleUp   *internalScalingRules
	ScaleDown *internalScalingRules
}

type internalScalingRules struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *autoscalingv2.ScalingPolicySelect
	Policies                   []internalScalingPolicy
	Tolerance                  *resource.Quantity
}

type internalScalingPolicy struct {
	Type          autoscalingv2.HPAScalingPolicyType
	Value         int32
	PeriodSeconds int32
}

func behaviorToInternal(in *autoscalingv2.HorizontalPodAutoscalerBehavior) internalBehavior {
	rules := func(r *autoscalingv2.HPAScalingRules) *internalScalingRules {
		if r == nil {
			return nil
		}
		out := &internalScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
		if r.Policies != nil {
			out.Policies = make([]internalScalingPolicy, len(r.Policies))
			for i, p := range r.Policies {
				out.Policies[i] = internalScalingPolicy(p)
			}
		}
		return out
	}
	return internalBehavior{ScaleUp: rules(in.ScaleUp), ScaleDown: rules(in.ScaleDown)}
}

func (b internalBehavior) toV2() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	rules := func(r *internalScalingRules) *autoscalingv2.HPAScalingRules {
		if r == nil {
			return nil
		}
		out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
		if r.Policies != nil {
			out.Policies = make([]autoscalingv2.HPAScalingPolicy, len(r.Policies))
			for i, p := range r.Policies {
				out.Policies[i] = autoscalingv2.HPAScalingPolicy(p)
			}
		}
		return out
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(b.ScaleUp), ScaleDown: rules(b.ScaleDown)}
}
