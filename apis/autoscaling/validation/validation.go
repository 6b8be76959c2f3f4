// Package validation checks autoscaling/v2 HorizontalPodAutoscalers as
// upstream's pkg/apis/autoscaling/validation does, with its field paths
// and messages. Metadata is the registry's to check.
package validation

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corevalidation "github.com/kite-project/kite/apis/core/validation"
)

const (
	// MaxPeriodSeconds is the largest scaling policy period.
	MaxPeriodSeconds int32 = 1800
	// MaxStabilizationWindowSeconds is the largest stabilization window.
	MaxStabilizationWindowSeconds int32 = 3600
)

// Upstream's supported values, in its sorted order (NotSupported
// messages list them).
var (
	selectPolicies = []string{string(autoscalingv2.DisabledPolicySelect), string(autoscalingv2.MaxChangePolicySelect), string(autoscalingv2.MinChangePolicySelect)}
	policyTypes    = []string{string(autoscalingv2.PercentScalingPolicy), string(autoscalingv2.PodsScalingPolicy)}
	metricTypes    = []string{string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
		string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType), string(autoscalingv2.ResourceMetricSourceType)}
)

// ReferenceOptions is upstream's CrossVersionObjectReferenceValidationOptions.
type ReferenceOptions struct {
	AllowEmptyAPIGroup     bool
	AllowInvalidAPIVersion bool
}

// Options is upstream's HorizontalPodAutoscalerSpecValidationOptions.
type Options struct {
	MinReplicasLowerBound int32
	ScaleTargetRef        ReferenceOptions
	ObjectMetrics         ReferenceOptions
}

// OptionsFor is upstream's validationOptionsForHorizontalPodAutoscaler
// (HPAScaleToZero off, as upstream's default): old is nil on create. An
// update keeps accepting what the stored object already had.
func OptionsFor(hpa, old *autoscalingv2.HorizontalPodAutoscaler) Options {
	opts := Options{MinReplicasLowerBound: 1, ObjectMetrics: ReferenceOptions{AllowEmptyAPIGroup: true}}
	if old != nil && old.Spec.MinReplicas != nil && *old.Spec.MinReplicas == 0 {
		opts.MinReplicasLowerBound = 0
	}
	switch {
	case old != nil && old.Spec.ScaleTargetRef.APIVersion == hpa.Spec.ScaleTargetRef.APIVersion && old.Spec.ScaleTargetRef.Kind == hpa.Spec.ScaleTargetRef.Kind:
		opts.ScaleTargetRef.AllowInvalidAPIVersion = true
	case hpa.Spec.ScaleTargetRef.Kind == "ReplicationController":
		// the one scalable kind of the core group
		opts.ScaleTargetRef.AllowEmptyAPIGroup = true
	}
	if old != nil {
		for _, m := range old.Spec.Metrics {
			if m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil {
				if err := validateAPIVersion(m.Object.DescribedObject, opts.ObjectMetrics); err != nil {
					opts.ObjectMetrics.AllowInvalidAPIVersion = true
					break
				}
			}
		}
	}
	return opts
}

// ValidateHorizontalPodAutoscaler checks an autoscaler's spec (on create
// and update alike, as upstream).
func ValidateHorizontalPodAutoscaler(hpa *autoscalingv2.HorizontalPodAutoscaler, opts Options) field.ErrorList {
	return validateSpec(&hpa.Spec, field.NewPath("spec"), opts)
}

// ValidateStatusUpdate is upstream's
// ValidateHorizontalPodAutoscalerStatusUpdate.
func ValidateStatusUpdate(status *autoscalingv2.HorizontalPodAutoscalerStatus) field.ErrorList {
	var errs field.ErrorList
	for i, c := range status.Conditions {
		if c.ObservedGeneration != nil {
			errs = append(errs, nonnegative(*c.ObservedGeneration, field.NewPath("status").Child("conditions").Index(i).Child("observedGeneration"))...)
		}
	}
	errs = append(errs, nonnegative(int64(status.CurrentReplicas), field.NewPath("status", "currentReplicas"))...)
	errs = append(errs, nonnegative(int64(status.DesiredReplicas), field.NewPath("status", "desiredReplicas"))...)
	return errs
}

func nonnegative(v int64, p *field.Path) field.ErrorList {
	if v < 0 {
		return field.ErrorList{field.Invalid(p, v, "must be greater than or equal to 0")}
	}
	return nil
}

func validateSpec(spec *autoscalingv2.HorizontalPodAutoscalerSpec, p *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	if spec.MinReplicas != nil && *spec.MinReplicas < opts.MinReplicasLowerBound {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *spec.MinReplicas, fmt.Sprintf("must be greater than or equal to %d", opts.MinReplicasLowerBound)))
	}
	if spec.MaxReplicas == 0 {
		errs = append(errs, field.Required(p.Child("maxReplicas"), "must be set and greater than 0"))
	} else if spec.MaxReplicas < 0 {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to 1"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateReference(spec.ScaleTargetRef, p.Child("scaleTargetRef"), opts.ScaleTargetRef)...)
	errs = append(errs, validateMetrics(spec.Metrics, p.Child("metrics"), spec.MinReplicas, opts.ObjectMetrics)...)
	if b := spec.Behavior; b != nil {
		errs = append(errs, validateRules(b.ScaleUp, p.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateRules(b.ScaleDown, p.Child("behavior", "scaleDown"))...)
	}
	return errs
}

func validateReference(ref autoscalingv2.CrossVersionObjectReference, p *field.Path, opts ReferenceOptions) field.ErrorList {
	var errs field.ErrorList
	if ref.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else {
		for _, msg := range content.IsPathSegmentName(ref.Kind) {
			errs = append(errs, field.Invalid(p.Child("kind"), ref.Kind, msg))
		}
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range content.IsPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	if err := validateAPIVersion(ref, opts); err != nil {
		errs = append(errs, field.Invalid(p.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	return errs
}

func validateAPIVersion(ref autoscalingv2.CrossVersionObjectReference, opts ReferenceOptions) error {
	if opts.AllowInvalidAPIVersion {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return err
	}
	if !opts.AllowEmptyAPIGroup && gv.Group == "" {
		return fmt.Errorf("apiVersion must specify API group")
	}
	return nil
}

func validateMetrics(metrics []autoscalingv2.MetricSpec, p *field.Path, minReplicas *int32, opts ReferenceOptions) field.ErrorList {
	var errs field.ErrorList
	objectOrExternal := false
	for i := range metrics {
		errs = append(errs, validateMetricSpec(&metrics[i], p.Index(i), opts)...)
		if t := metrics[i].Type; t == autoscalingv2.ObjectMetricSourceType || t == autoscalingv2.ExternalMetricSourceType {
			objectOrExternal = true
		}
	}
	if minReplicas != nil && *minReplicas == 0 && !objectOrExternal {
		errs = append(errs, field.Forbidden(p, "must specify at least one Object or External metric to support scaling to zero replicas"))
	}
	return errs
}

func validateRules(rules *autoscalingv2.HPAScalingRules, p *field.Path) field.ErrorList {
	if rules == nil {
		return nil
	}
	var errs field.ErrorList
	if w := rules.StabilizationWindowSeconds; w != nil && *w < 0 {
		errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), w, "must be greater than or equal to zero"))
	}
	if w := rules.StabilizationWindowSeconds; w != nil && *w > MaxStabilizationWindowSeconds {
		errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), w, fmt.Sprintf("must be less than or equal to %v", MaxStabilizationWindowSeconds)))
	}
	if s := rules.SelectPolicy; s != nil && !contains(selectPolicies, string(*s)) {
		errs = append(errs, field.NotSupported(p.Child("selectPolicy"), s, selectPolicies))
	}
	pp := p.Child("policies")
	if len(rules.Policies) == 0 {
		errs = append(errs, field.Required(pp, "must specify at least one Policy"))
	}
	for i, pol := range rules.Policies {
		ip := pp.Index(i)
		if !contains(policyTypes, string(pol.Type)) {
			errs = append(errs, field.NotSupported(ip.Child("type"), pol.Type, policyTypes))
		}
		if pol.Value <= 0 {
			errs = append(errs, field.Invalid(ip.Child("value"), pol.Value, "must be greater than zero"))
		}
		if pol.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), pol.PeriodSeconds, "must be greater than zero"))
		}
		if pol.PeriodSeconds > MaxPeriodSeconds {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), pol.PeriodSeconds, fmt.Sprintf("must be less than or equal to %v", MaxPeriodSeconds)))
		}
	}
	if t := rules.Tolerance; t != nil && t.Sign() < 0 {
		errs = append(errs, field.Invalid(p.Child("tolerance"), t.String(), "must be greater than or equal to 0"))
	}
	return errs
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// validateMetricSpec checks one metric: a known type whose one source is
// set, and that source.
func validateMetricSpec(spec *autoscalingv2.MetricSpec, p *field.Path, opts ReferenceOptions) field.ErrorList {
	var errs field.ErrorList
	if spec.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric source type"))
	}
	if !contains(metricTypes, string(spec.Type)) {
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, metricTypes))
	}
	// Only the first source present (in upstream's order) is checked;
	// the others are forbidden below.
	var present []string
	if spec.Object != nil {
		if present = append(present, "object"); len(present) == 1 {
			errs = append(errs, validateObjectSource(spec.Object, p.Child("object"), opts)...)
		}
	}
	if spec.External != nil {
		if present = append(present, "external"); len(present) == 1 {
			errs = append(errs, validateExternalSource(spec.External, p.Child("external"))...)
		}
	}
	if spec.Pods != nil {
		if present = append(present, "pods"); len(present) == 1 {
			errs = append(errs, validatePodsSource(spec.Pods, p.Child("pods"))...)
		}
	}
	if spec.Resource != nil {
		if present = append(present, "resource"); len(present) == 1 {
			errs = append(errs, validateResourceSource(spec.Resource, p.Child("resource"))...)
		}
	}
	if spec.ContainerResource != nil {
		if present = append(present, "containerResource"); len(present) == 1 {
			errs = append(errs, validateContainerResourceSource(spec.ContainerResource, p.Child("containerResource"))...)
		}
	}

	expected, set := "", false
	switch spec.Type {
	case autoscalingv2.ObjectMetricSourceType:
		expected, set = "object", spec.Object != nil
	case autoscalingv2.PodsMetricSourceType:
		expected, set = "pods", spec.Pods != nil
	case autoscalingv2.ResourceMetricSourceType:
		expected, set = "resource", spec.Resource != nil
	case autoscalingv2.ExternalMetricSourceType:
		expected, set = "external", spec.External != nil
	case autoscalingv2.ContainerResourceMetricSourceType:
		expected, set = "containerResource", spec.ContainerResource != nil
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, metricTypes))
	}
	if expected != "" && !set {
		errs = append(errs, field.Required(p.Child(expected), "must populate information for the given metric source"))
	}
	if len(present) != 1 {
		for _, typ := range present {
			if typ != expected {
				errs = append(errs, field.Forbidden(p.Child(typ), "must populate the given metric source only"))
			}
		}
	}
	return errs
}

func validateObjectSource(src *autoscalingv2.ObjectMetricSource, p *field.Path, opts ReferenceOptions) field.ErrorList {
	errs := validateReference(src.DescribedObject, p.Child("describedObject"), opts)
	errs = append(errs, validateMetricIdentifier(src.Metric, p.Child("metric"))...)
	errs = append(errs, validateMetricTarget(src.Target, p.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value or averageValue"))
	}
	return errs
}

func validateExternalSource(src *autoscalingv2.ExternalMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(src.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(src.Target, p.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
	}
	if src.Target.Value != nil && src.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "value"), "may not set both a target value for metric and a per-pod target"))
	}
	return errs
}

func validatePodsSource(src *autoscalingv2.PodsMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(src.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(src.Target, p.Child("target"))...)
	if src.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must specify a positive target averageValue"))
	}
	return errs
}

func validateContainerResourceSource(src *autoscalingv2.ContainerResourceMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if src.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	} else {
		errs = append(errs, corevalidation.ValidateContainerResourceName(src.Name, p.Child("name"))...)
	}
	if src.Container == "" {
		errs = append(errs, field.Required(p.Child("container"), "must specify a container"))
	} else {
		for _, msg := range validation.IsDNS1123Label(src.Container) {
			errs = append(errs, field.Invalid(p.Child("container"), src.Container, msg))
		}
	}
	return append(errs, validateResourceTarget(src.Target, p)...)
}

func validateResourceSource(src *autoscalingv2.ResourceMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if src.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	}
	return append(errs, validateResourceTarget(src.Target, p)...)
}

// validateResourceTarget is what resource and containerResource sources
// share: one of a raw value or a utilization.
func validateResourceTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	errs := validateMetricTarget(t, p.Child("target"))
	if t.AverageUtilization == nil && t.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if t.AverageUtilization != nil && t.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateMetricTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(p.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("value"), quantity(t.Value), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("averageValue"), quantity(t.AverageValue), "must be positive"))
	}
	if u := t.AverageUtilization; u != nil && *u < 1 {
		errs = append(errs, field.Invalid(p.Child("averageUtilization"), u, "must be greater than 0"))
	}
	return errs
}

func quantity(q *resource.Quantity) string { return q.String() }

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, p *field.Path) field.ErrorList {
	if id.Name == "" {
		return field.ErrorList{field.Required(p.Child("name"), "must specify a metric name")}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(id.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), id.Name, msg))
	}
	return errs
}
