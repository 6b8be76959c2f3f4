package validation

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Length limits of events.k8s.io fields, as upstream's.
const (
	ReportingInstanceLengthLimit = 128
	ActionLengthLimit            = 128
	ReasonLengthLimit            = 128
	NoteLengthLimit              = 1024
)

// Upstream validates both event APIs on one internal type, so errors name
// the internal fields: "involvedObject" for regarding, "message" for note,
// "source" for deprecatedSource and so on, whichever API the client used.

// ValidateEvent checks a core/v1 event on create, as upstream does for a
// request to /api/v1: only the legacy rules (namespace agreement with the
// involved object; for events with eventTime, the reporting fields and
// length limits), then the generic metadata check every resource gets
// (name a valid path segment), which for core events is the only name rule.
func ValidateEvent(ev *corev1.Event) field.ErrorList {
	allErrs := legacyValidateEvent(ev, true)
	if len(allErrs) == 0 {
		allErrs = apivalidation.ValidateObjectMeta(&ev.ObjectMeta, true, path.ValidatePathSegmentName, field.NewPath("metadata"))
	}
	return allErrs
}

// ValidateEventUpdate checks a core/v1 event update: the legacy rules only,
// as upstream (old clients update counts and timestamps freely).
func ValidateEventUpdate(ev, _ *corev1.Event) field.ErrorList {
	return legacyValidateEvent(ev, true)
}

// ValidateEventV1 checks an events.k8s.io/v1 event on create: the legacy
// rules plus the strict ones (name a DNS-1123 subdomain, eventTime set, type
// Normal or Warning, series sane, deprecated fields unset).
func ValidateEventV1(ev *eventsv1.Event) field.ErrorList {
	core := eventToCore(ev)
	allErrs := legacyValidateEvent(core, false)
	allErrs = append(allErrs, apivalidation.ValidateObjectMeta(&core.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	allErrs = append(allErrs, validateEventSeries(core)...)
	if core.EventTime.IsZero() {
		allErrs = append(allErrs, field.Required(field.NewPath("eventTime"), ""))
	}
	if core.Type != corev1.EventTypeNormal && core.Type != corev1.EventTypeWarning {
		allErrs = append(allErrs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", core.Type)))
	}
	if !core.FirstTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !core.LastTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if core.Count != 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if core.Source.Component != "" || core.Source.Host != "" {
		allErrs = append(allErrs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return allErrs
}

// ValidateEventV1Update checks an events.k8s.io/v1 event update: legacy
// rules, metadata update rules, a changed series valid, and everything but
// the series (and metadata) unchanged.
func ValidateEventV1Update(ev, old *eventsv1.Event) field.ErrorList {
	n, o := eventToCore(ev), eventToCore(old)
	allErrs := legacyValidateEvent(n, false)
	allErrs = append(allErrs, apivalidation.ValidateObjectMetaUpdate(&n.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))...)
	if !reflect.DeepEqual(n.Series, o.Series) {
		allErrs = append(allErrs, validateEventSeries(n)...)
	}
	for _, f := range []struct {
		name     string
		new, old any
	}{
		{"involvedObject", n.InvolvedObject, o.InvolvedObject},
		{"reason", n.Reason, o.Reason},
		{"message", n.Message, o.Message},
		{"source", n.Source, o.Source},
		{"firstTimestamp", n.FirstTimestamp, o.FirstTimestamp},
		{"lastTimestamp", n.LastTimestamp, o.LastTimestamp},
		{"count", n.Count, o.Count},
		{"type", n.Type, o.Type},
	} {
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(f.new, f.old, field.NewPath(f.name))...)
	}
	// Sub-microsecond differences are tolerated: clients round-trip
	// eventTime at microsecond precision.
	if !n.EventTime.Time.Truncate(1000).Equal(o.EventTime.Time.Truncate(1000)) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("eventTime"), n.EventTime, "field is immutable"))
	}
	return allErrs
}

func validateEventSeries(ev *corev1.Event) field.ErrorList {
	if ev.Series == nil {
		return nil
	}
	var allErrs field.ErrorList
	if ev.Series.Count < 2 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if ev.Series.LastObservedTime.IsZero() {
		allErrs = append(allErrs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return allErrs
}

// legacyValidateEvent is upstream's legacyValidateEvent. coreAPI says the
// request came through /api/v1, where the reporting controller field is
// called reportingComponent.
func legacyValidateEvent(ev *corev1.Event, coreAPI bool) field.ErrorList {
	var allErrs field.ErrorList
	reportingField := "reportingController"
	if coreAPI {
		reportingField = "reportingComponent"
	}
	nsPath := field.NewPath("involvedObject", "namespace")
	if ev.EventTime.IsZero() {
		// An old-style event: its namespace must agree with the object's
		// (a cluster-scoped object's events live in "default" or nowhere).
		if ev.InvolvedObject.Namespace == "" {
			if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
				allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if ev.Namespace != ev.InvolvedObject.Namespace {
			allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if ev.InvolvedObject.Namespace == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
			allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		if ev.ReportingController == "" {
			allErrs = append(allErrs, field.Required(field.NewPath(reportingField), ""))
		}
		allErrs = append(allErrs, validateQualifiedName(ev.ReportingController, field.NewPath(reportingField))...)
		if ev.ReportingInstance == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("reportingInstance"), ""))
		}
		if len(ev.ReportingInstance) > ReportingInstanceLengthLimit {
			allErrs = append(allErrs, field.Invalid(field.NewPath("reportingInstance"), "", fmt.Sprintf("can have at most %v characters", ReportingInstanceLengthLimit)))
		}
		if ev.Action == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("action"), ""))
		}
		if len(ev.Action) > ActionLengthLimit {
			allErrs = append(allErrs, field.Invalid(field.NewPath("action"), "", fmt.Sprintf("can have at most %v characters", ActionLengthLimit)))
		}
		if ev.Reason == "" {
			allErrs = append(allErrs, field.Required(field.NewPath("reason"), ""))
		}
		if len(ev.Reason) > ReasonLengthLimit {
			allErrs = append(allErrs, field.Invalid(field.NewPath("reason"), "", fmt.Sprintf("can have at most %v characters", ReasonLengthLimit)))
		}
		if len(ev.Message) > NoteLengthLimit {
			allErrs = append(allErrs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", NoteLengthLimit)))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(ev.Namespace) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("namespace"), ev.Namespace, msg))
	}
	return allErrs
}

// eventToCore maps an events.k8s.io/v1 event onto the core one, field by
// field as upstream's conversion does, so both APIs share one set of rules.
func eventToCore(ev *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          ev.ObjectMeta,
		InvolvedObject:      ev.Regarding,
		Reason:              ev.Reason,
		Message:             ev.Note,
		Source:              ev.DeprecatedSource,
		FirstTimestamp:      ev.DeprecatedFirstTimestamp,
		LastTimestamp:       ev.DeprecatedLastTimestamp,
		Count:               ev.DeprecatedCount,
		Type:                ev.Type,
		EventTime:           ev.EventTime,
		Related:             ev.Related,
		Action:              ev.Action,
		ReportingController: ev.ReportingController,
		ReportingInstance:   ev.ReportingInstance,
	}
	if ev.Series != nil {
		out.Series = &corev1.EventSeries{Count: ev.Series.Count, LastObservedTime: ev.Series.LastObservedTime}
	}
	return out
}
