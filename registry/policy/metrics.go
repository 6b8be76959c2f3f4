package policy

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are upstream's ValidatingAdmissionPolicy and
// MutatingAdmissionPolicy series
// (k8s.io/apiserver/pkg/admission/plugin/policy/{validating,mutating}/metrics):
// the same names, help, labels and buckets, in the server's registry
// instead of upstream's process-global one.
type metrics struct {
	check   *prometheus.CounterVec
	latency *prometheus.HistogramVec
	// mutationCheck and mutationLatency are the mutating policies'.
	mutationCheck   *prometheus.CounterVec
	mutationLatency *prometheus.HistogramVec
}

var (
	policyMetricLabels   = []string{"policy", "policy_binding", "error_type", "enforcement_action"}
	mutationMetricLabels = []string{"policy", "policy_binding", "error_type"}
	// policyBuckets are upstream's, for both kinds of policy: from 0.5 µs
	// (a simple expression) to 1 s (one close to the cost limit).
	policyBuckets = []float64{0.0000005, 0.001, 0.01, 0.1, 1.0}
)

// newMetrics registers the series with reg; nil without a registry.
func newMetrics(reg prometheus.Registerer) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		check: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "validating_admission_policy", Name: "check_total",
			Help: "Validation admission policy check total, labeled by policy and further identified by binding and enforcement action taken.",
		}, policyMetricLabels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "apiserver", Subsystem: "validating_admission_policy", Name: "check_duration_seconds",
			Help:    "Validation admission latency for individual validation expressions in seconds, labeled by policy and further including binding and enforcement action taken.",
			Buckets: policyBuckets,
		}, policyMetricLabels),
		mutationCheck: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "apiserver", Subsystem: "mutating_admission_policy", Name: "check_total",
			Help: "Mutation admission policy check total, labeled by policy and further identified by binding.",
		}, mutationMetricLabels),
		mutationLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "apiserver", Subsystem: "mutating_admission_policy", Name: "check_duration_seconds",
			Help:    "Mutation admission latency for individual mutation expressions in seconds, labeled by policy and binding.",
			Buckets: policyBuckets,
		}, mutationMetricLabels),
	}
	reg.MustRegister(m.check, m.latency, m.mutationCheck, m.mutationLatency)
	return m
}

// The enforcement actions of the series.
const (
	actionAllow = "allow"
	actionDeny  = "deny"
	actionAudit = "audit"
	actionWarn  = "warn"
)

// observe counts one decision of a validation (or an auditAnnotation's
// error) under an enforcement action, as upstream's dispatcher does: for
// every denial per binding action, and for an evaluation error that
// failurePolicy Ignore let through ("allow"). Validations that pass are
// not counted, as upstream.
func (m *metrics) observe(policy, binding, action string, d decision) {
	if m == nil {
		return
	}
	et := errorType(d)
	m.check.WithLabelValues(policy, binding, et, action).Inc()
	m.latency.WithLabelValues(policy, binding, et, action).Observe(d.elapsed.Seconds())
}

// observeMutation counts one mutation of a policy invocation, applied
// (err nil: "no_error") or failed, with the time its patch took, as
// upstream's mutating dispatcher does for every mutation it runs.
func (m *metrics) observeMutation(policy, binding string, err error, elapsed time.Duration) {
	if m == nil {
		return
	}
	et := mutationErrorType(err)
	m.mutationCheck.WithLabelValues(policy, binding, et).Inc()
	m.mutationLatency.WithLabelValues(policy, binding, et).Observe(elapsed.Seconds())
}

// mutationErrorType is upstream's mutating ErrorType: read from the
// error's message.
func mutationErrorType(err error) string {
	switch {
	case err == nil:
		return "no_error"
	case strings.HasPrefix(err.Error(), "compilation"):
		return "compile_error"
	case strings.HasPrefix(err.Error(), "validation failed due to running out of cost budget"):
		return "out_of_budget"
	}
	return "invalid_error"
}

// errorType is upstream's ErrorType of a decision: "no_error" for none
// (an admitted one), else read from the message, so that a validation
// that is simply false counts as "invalid_error" as upstream's does.
func errorType(d decision) string {
	switch {
	case !d.deny && !d.evalError:
		return "no_error"
	case strings.HasPrefix(d.message, "compilation"):
		return "compile_error"
	case strings.HasPrefix(d.message, "validation failed due to running out of cost budget"):
		return "out_of_budget"
	}
	return "invalid_error"
}
