// Package validation is the essential part of upstream's validation of
// resource.k8s.io/v1 (k8s.io/kubernetes/pkg/apis/resource/validation),
// ported to the v1 types with its field paths and messages: names,
// required fields, enums and immutable fields. CEL selectors are not
// compiled here (upstream checks them, and so does the scheduler that uses
// them).
package validation

import (
	"fmt"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const driverNameMaxLength = 63

func validateDriverName(name string, fldPath *field.Path) field.ErrorList {
	allErrs := validateNonEmpty(strings.ToLower(name), fldPath, validation.IsDNS1123Subdomain)
	if len(name) > driverNameMaxLength {
		allErrs = append(allErrs, field.TooLong(fldPath, "", driverNameMaxLength))
	}
	return allErrs
}

func validateDNSLabel(name string, fldPath *field.Path) field.ErrorList {
	return validateNonEmpty(name, fldPath, validation.IsDNS1123Label)
}

func validateSubdomain(name string, fldPath *field.Path) field.ErrorList {
	return validateNonEmpty(name, fldPath, validation.IsDNS1123Subdomain)
}

// validateNonEmpty requires name and checks it with check.
func validateNonEmpty(name string, fldPath *field.Path, check func(string) []string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range check(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

func validateSelectors(selectors []resourcev1.DeviceSelector, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, s := range selectors {
		p := fldPath.Index(i)
		if s.CEL == nil {
			allErrs = append(allErrs, field.Required(p.Child("cel"), ""))
		} else if strings.TrimSpace(s.CEL.Expression) == "" {
			allErrs = append(allErrs, field.Required(p.Child("cel", "expression"), ""))
		}
	}
	return allErrs
}

func validateAllocationMode(mode resourcev1.DeviceAllocationMode, count int64, modePath, countPath *field.Path) field.ErrorList {
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			return field.ErrorList{field.Invalid(countPath, count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode))}
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			return field.ErrorList{field.Invalid(countPath, count, "must be greater than zero")}
		}
	default:
		return field.ErrorList{field.NotSupported(modePath, mode, []resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount})}
	}
	return nil
}

func validateClaimSpec(spec *resourcev1.ResourceClaimSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := map[string]bool{}
	rp := fldPath.Child("devices", "requests")
	for i, req := range spec.Devices.Requests {
		p := rp.Index(i)
		allErrs = append(allErrs, validateDNSLabel(req.Name, p.Child("name"))...)
		if names[req.Name] {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), req.Name))
		}
		names[req.Name] = true
		switch {
		case req.Exactly == nil && len(req.FirstAvailable) == 0:
			allErrs = append(allErrs, field.Required(p, "exactly one of `exactly` or `firstAvailable` is required"))
		case req.Exactly != nil && len(req.FirstAvailable) > 0:
			allErrs = append(allErrs, field.Invalid(p, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
		case req.Exactly != nil:
			e, ep := req.Exactly, p.Child("exactly")
			allErrs = append(allErrs, validateSubdomain(e.DeviceClassName, ep.Child("deviceClassName"))...)
			allErrs = append(allErrs, validateSelectors(e.Selectors, ep.Child("selectors"))...)
			allErrs = append(allErrs, validateAllocationMode(e.AllocationMode, e.Count, ep.Child("allocationMode"), ep.Child("count"))...)
		default:
			for j, sub := range req.FirstAvailable {
				sp := p.Child("firstAvailable").Index(j)
				allErrs = append(allErrs, validateDNSLabel(sub.Name, sp.Child("name"))...)
				allErrs = append(allErrs, validateSubdomain(sub.DeviceClassName, sp.Child("deviceClassName"))...)
				allErrs = append(allErrs, validateSelectors(sub.Selectors, sp.Child("selectors"))...)
				allErrs = append(allErrs, validateAllocationMode(sub.AllocationMode, sub.Count, sp.Child("allocationMode"), sp.Child("count"))...)
			}
		}
	}
	return allErrs
}

// ValidateResourceClaim is upstream's ValidateResourceClaim (metadata is
// the Store's).
func ValidateResourceClaim(c *resourcev1.ResourceClaim) field.ErrorList {
	return validateClaimSpec(&c.Spec, field.NewPath("spec"))
}

// ValidateResourceClaimUpdate is upstream's: the spec is immutable.
func ValidateResourceClaimUpdate(c, old *resourcev1.ResourceClaim) field.ErrorList {
	return apivalidation.ValidateImmutableField(c.Spec, old.Spec, field.NewPath("spec"))
}

// ValidateResourceClaimStatusUpdate checks the allocation's results name
// requests of the claim and reserved consumers are unique.
func ValidateResourceClaimStatusUpdate(c, _ *resourcev1.ResourceClaim) field.ErrorList {
	var allErrs field.ErrorList
	fldPath := field.NewPath("status")
	if a := c.Status.Allocation; a != nil {
		for i, r := range a.Devices.Results {
			p := fldPath.Child("allocation", "devices", "results").Index(i)
			parent, _, _ := strings.Cut(r.Request, "/")
			if !slices.ContainsFunc(c.Spec.Devices.Requests, func(req resourcev1.DeviceRequest) bool { return req.Name == parent }) {
				allErrs = append(allErrs, field.Invalid(p.Child("request"), r.Request, "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"))
			}
			allErrs = append(allErrs, validateDriverName(r.Driver, p.Child("driver"))...)
		}
	}
	seen := map[string]bool{}
	for i, ref := range c.Status.ReservedFor {
		if seen[string(ref.UID)] {
			allErrs = append(allErrs, field.Duplicate(fldPath.Child("reservedFor").Index(i), ref))
		}
		seen[string(ref.UID)] = true
	}
	return allErrs
}

// ValidateResourceClaimTemplate is upstream's.
func ValidateResourceClaimTemplate(t *resourcev1.ResourceClaimTemplate) field.ErrorList {
	allErrs := metav1validation.ValidateLabels(t.Spec.Labels, field.NewPath("spec", "metadata", "labels"))
	return append(allErrs, validateClaimSpec(&t.Spec.Spec, field.NewPath("spec", "spec"))...)
}

// ValidateResourceClaimTemplateUpdate is upstream's: the spec is
// immutable.
func ValidateResourceClaimTemplateUpdate(t, old *resourcev1.ResourceClaimTemplate) field.ErrorList {
	return apivalidation.ValidateImmutableField(t.Spec, old.Spec, field.NewPath("spec"))
}

// ValidateDeviceClass is upstream's ValidateDeviceClass.
func ValidateDeviceClass(c *resourcev1.DeviceClass) field.ErrorList {
	allErrs := validateSelectors(c.Spec.Selectors, field.NewPath("spec", "selectors"))
	for i, cfg := range c.Spec.Config {
		p := field.NewPath("spec", "config").Index(i)
		if cfg.Opaque == nil {
			allErrs = append(allErrs, field.Required(p.Child("opaque"), ""))
			continue
		}
		allErrs = append(allErrs, validateDriverName(cfg.Opaque.Driver, p.Child("opaque", "driver"))...)
	}
	return allErrs
}

// ValidateDeviceClassUpdate is upstream's: the new class is valid.
func ValidateDeviceClassUpdate(c, _ *resourcev1.DeviceClass) field.ErrorList {
	return ValidateDeviceClass(c)
}

// ValidateResourceSlice is upstream's ValidateResourceSlice.
func ValidateResourceSlice(s *resourcev1.ResourceSlice) field.ErrorList {
	return validateSliceSpec(&s.Spec, nil, field.NewPath("spec"))
}

// ValidateResourceSliceUpdate is upstream's: driver, pool name and node
// name are immutable.
func ValidateResourceSliceUpdate(s, old *resourcev1.ResourceSlice) field.ErrorList {
	return validateSliceSpec(&s.Spec, &old.Spec, field.NewPath("spec"))
}

func validateSliceSpec(spec, old *resourcev1.ResourceSliceSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateDriverName(spec.Driver, fldPath.Child("driver"))
	pp := fldPath.Child("pool")
	if spec.Pool.Name == "" {
		allErrs = append(allErrs, field.Required(pp.Child("name"), ""))
	} else {
		for _, part := range strings.Split(spec.Pool.Name, "/") {
			for _, msg := range validation.IsDNS1123Subdomain(part) {
				allErrs = append(allErrs, field.Invalid(pp.Child("name"), spec.Pool.Name, msg))
			}
		}
	}
	if spec.Pool.ResourceSliceCount <= 0 {
		allErrs = append(allErrs, field.Invalid(pp.Child("resourceSliceCount"), spec.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if spec.Pool.Generation < 0 {
		allErrs = append(allErrs, field.Invalid(pp.Child("generation"), spec.Pool.Generation, "must be greater than or equal to zero"))
	}
	if old != nil {
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(spec.Pool.Name, old.Pool.Name, pp.Child("name"))...)
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(spec.Driver, old.Driver, fldPath.Child("driver"))...)
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(spec.NodeName, old.NodeName, fldPath.Child("nodeName"))...)
	}
	var set []string
	if spec.NodeName != nil {
		if *spec.NodeName != "" {
			set = append(set, "`nodeName`")
			for _, msg := range apivalidation.NameIsDNSSubdomain(*spec.NodeName, false) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeName"), *spec.NodeName, msg))
			}
		} else {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeName"), *spec.NodeName, "must be either unset or set to a non-empty string"))
		}
	}
	if spec.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		if len(spec.NodeSelector.NodeSelectorTerms) != 1 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeSelector", "nodeSelectorTerms"), spec.NodeSelector.NodeSelectorTerms, "must have exactly one node selector term"))
		}
	}
	if spec.AllNodes != nil {
		if *spec.AllNodes {
			set = append(set, "`allNodes`")
		} else {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("allNodes"), *spec.AllNodes, "must be either unset or set to true"))
		}
	}
	if spec.PerDeviceNodeSelection != nil {
		if *spec.PerDeviceNodeSelection {
			set = append(set, "`perDeviceNodeSelection`")
		} else {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("perDeviceNodeSelection"), *spec.PerDeviceNodeSelection, "must be either unset or set to true"))
		}
	}
	switch len(set) {
	case 0:
		allErrs = append(allErrs, field.Required(fldPath, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
	case 1:
	default:
		allErrs = append(allErrs, field.Invalid(fldPath, fmt.Sprintf("{%s}", strings.Join(set, ", ")), "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"))
	}
	if spec.SharedCounters != nil && spec.Devices != nil {
		allErrs = append(allErrs, field.Invalid(fldPath, "", "only one of `sharedCounters` or `devices` is allowed"))
	}
	names := map[string]bool{}
	for i, d := range spec.Devices {
		p := fldPath.Child("devices").Index(i).Child("name")
		allErrs = append(allErrs, validateDNSLabel(d.Name, p)...)
		if names[d.Name] {
			allErrs = append(allErrs, field.Duplicate(p, d.Name))
		}
		names[d.Name] = true
	}
	return allErrs
}

var deviceTaintEffects = []resourcev1.DeviceTaintEffect{resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNone}

// ValidateDeviceTaintRule is upstream's ValidateDeviceTaintRule.
func ValidateDeviceTaintRule(r *resourcev1.DeviceTaintRule) field.ErrorList {
	return validateTaintRule(&r.Spec, nil)
}

// ValidateDeviceTaintRuleUpdate is upstream's.
func ValidateDeviceTaintRuleUpdate(r, old *resourcev1.DeviceTaintRule) field.ErrorList {
	return validateTaintRule(&r.Spec, &old.Spec)
}

func validateTaintRule(spec, old *resourcev1.DeviceTaintRuleSpec) field.ErrorList {
	fldPath := field.NewPath("spec")
	var allErrs field.ErrorList
	if s := spec.DeviceSelector; s != nil {
		sp := fldPath.Child("deviceSelector")
		if s.Driver != nil {
			allErrs = append(allErrs, validateDriverName(*s.Driver, sp.Child("driver"))...)
		}
		if s.Device != nil {
			allErrs = append(allErrs, validateDNSLabel(*s.Device, sp.Child("device"))...)
		}
	}
	tp := fldPath.Child("taint")
	allErrs = append(allErrs, metav1validation.ValidateLabelName(spec.Taint.Key, tp.Child("key"))...)
	if spec.Taint.Value != "" {
		for _, msg := range validation.IsValidLabelValue(spec.Taint.Value) {
			allErrs = append(allErrs, field.Invalid(tp.Child("value"), spec.Taint.Value, msg))
		}
	}
	if old == nil || old.Taint.Effect != spec.Taint.Effect {
		switch {
		case spec.Taint.Effect == "":
			allErrs = append(allErrs, field.Required(tp.Child("effect"), ""))
		case !slices.Contains(deviceTaintEffects, spec.Taint.Effect):
			allErrs = append(allErrs, field.NotSupported(tp.Child("effect"), spec.Taint.Effect, deviceTaintEffects))
		}
	}
	return allErrs
}
