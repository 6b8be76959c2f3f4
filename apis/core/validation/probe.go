package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var supportedHTTPSchemes = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}

func validateProbe(p *corev1.Probe, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	h := &p.ProbeHandler
	allErrs := validateHandler(fldPath, []handler{
		{"exec", h.Exec != nil, func(f *field.Path) field.ErrorList { return validateExecAction(h.Exec, f) }},
		{"httpGet", h.HTTPGet != nil, func(f *field.Path) field.ErrorList { return validateHTTPGetAction(h.HTTPGet, f) }},
		{"tcpSocket", h.TCPSocket != nil, func(f *field.Path) field.ErrorList { return validatePortNumOrName(h.TCPSocket.Port, f.Child("port")) }},
		{"grpc", h.GRPC != nil, func(f *field.Path) field.ErrorList { return validateGRPCAction(h.GRPC, f) }},
	})
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if g := p.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return allErrs
}

// validateLivenessProbe is also upstream's rule for startup probes: a
// single success must be enough.
func validateLivenessProbe(p *corev1.Probe, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	allErrs := validateProbe(p, fldPath)
	if p.SuccessThreshold != 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	return allErrs
}

func validateReadinessProbe(p *corev1.Probe, fldPath *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	allErrs := validateProbe(p, fldPath)
	if p.TerminationGracePeriodSeconds != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
	}
	return allErrs
}

func validateLifecycle(l *corev1.Lifecycle, grace *int64, fldPath *field.Path) field.ErrorList {
	if l == nil {
		return nil
	}
	var allErrs field.ErrorList
	for _, hook := range []struct {
		name string
		h    *corev1.LifecycleHandler
	}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
		h := hook.h
		if h == nil {
			continue
		}
		allErrs = append(allErrs, validateHandler(fldPath.Child(hook.name), []handler{
			{"exec", h.Exec != nil, func(f *field.Path) field.ErrorList { return validateExecAction(h.Exec, f) }},
			{"httpGet", h.HTTPGet != nil, func(f *field.Path) field.ErrorList { return validateHTTPGetAction(h.HTTPGet, f) }},
			{"tcpSocket", h.TCPSocket != nil, func(f *field.Path) field.ErrorList { return validatePortNumOrName(h.TCPSocket.Port, f.Child("port")) }},
			{"sleep", h.Sleep != nil, func(f *field.Path) field.ErrorList { return validateSleepAction(h.Sleep, grace, f) }},
		})...)
	}
	return allErrs
}

// handler is one of the mutually exclusive actions of a probe or hook.
type handler struct {
	name     string
	set      bool
	validate func(*field.Path) field.ErrorList
}

// validateHandler checks that exactly one action is set and validates it.
func validateHandler(fldPath *field.Path, handlers []handler) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	for _, h := range handlers {
		if !h.set {
			continue
		}
		if n > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(h.name), "may not specify more than 1 handler type"))
			continue
		}
		n++
		allErrs = append(allErrs, h.validate(fldPath.Child(h.name))...)
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a handler type"))
	}
	return allErrs
}

func validateExecAction(e *corev1.ExecAction, fldPath *field.Path) field.ErrorList {
	if len(e.Command) == 0 {
		return field.ErrorList{field.Required(fldPath.Child("command"), "")}
	}
	return nil
}

func validateHTTPGetAction(h *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if h.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, validatePortNumOrName(h.Port, fldPath.Child("port"))...)
	supported := false
	for _, s := range supportedHTTPSchemes {
		supported = supported || h.Scheme == s
	}
	if !supported {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("scheme"), h.Scheme, supportedHTTPSchemes))
	}
	for _, header := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(header.Name) {
			// Upstream reports these at the list, not at the header.
			allErrs = append(allErrs, field.Invalid(fldPath.Child("httpHeaders"), header.Name, msg))
		}
	}
	return allErrs
}

func validateGRPCAction(g *corev1.GRPCAction, fldPath *field.Path) field.ErrorList {
	return validatePortNumOrName(intstr.FromInt32(g.Port), fldPath.Child("port"))
}

// validateSleepAction: a preStop/postStart sleep must end within the
// pod's grace period (zero allowed, as with PodLifecycleSleepActionAllowZero).
// A missing grace period is reported elsewhere.
func validateSleepAction(s *corev1.SleepAction, grace *int64, fldPath *field.Path) field.ErrorList {
	if grace != nil && (s.Seconds < 0 || s.Seconds > *grace) {
		return field.ErrorList{field.Invalid(fldPath, s.Seconds,
			fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace))}
	}
	return nil
}

// validatePortNumOrName checks a port given as a number (1-65535) or as an
// IANA_SVC_NAME.
func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			allErrs = append(allErrs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		allErrs = append(allErrs, field.InternalError(fldPath, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return allErrs
}
