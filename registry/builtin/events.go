package builtin

import (
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/registry"
)

// EventTTL is how long events live (kube-apiserver's --event-ttl default).
const EventTTL = time.Hour

var eventFieldLabels = []string{
	"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
	"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
	"reason", "reportingComponent", "source", "type",
}

// Events returns the strategy of core/v1 events; they expire after
// EventTTL.
func Events() *registry.Strategy {
	return &registry.Strategy{
		Kind:         v1.SchemeGroupVersion.WithKind("Event"),
		Resource:     "events",
		SingularName: "event",
		ShortNames:   []string{"ev"},
		Namespaced:   true,
		New:          func() runtime.Object { return &v1.Event{} },
		NewList:      func() runtime.Object { return &v1.EventList{} },
		Validate: func(obj runtime.Object) field.ErrorList {
			ev := obj.(*v1.Event)
			if ev.InvolvedObject.Namespace != "" && ev.InvolvedObject.Namespace != ev.Namespace {
				return field.ErrorList{field.Invalid(field.NewPath("involvedObject", "namespace"), ev.InvolvedObject.Namespace, "does not match event.namespace")}
			}
			return nil
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			ev := obj.(*v1.Event)
			source := ev.Source.Component
			if source == "" {
				source = ev.ReportingController
			}
			return fields.Set{
				"involvedObject.kind":            ev.InvolvedObject.Kind,
				"involvedObject.namespace":       ev.InvolvedObject.Namespace,
				"involvedObject.name":            ev.InvolvedObject.Name,
				"involvedObject.uid":             string(ev.InvolvedObject.UID),
				"involvedObject.apiVersion":      ev.InvolvedObject.APIVersion,
				"involvedObject.resourceVersion": ev.InvolvedObject.ResourceVersion,
				"involvedObject.fieldPath":       ev.InvolvedObject.FieldPath,
				"reason":                         ev.Reason,
				"reportingComponent":             ev.ReportingController,
				"source":                         source,
				"type":                           ev.Type,
			}
		},
		FieldLabels:              eventFieldLabels,
		AllowUnconditionalUpdate: true,
		TTL:                      func(runtime.Object) uint64 { return uint64(EventTTL / time.Second) },
	}
}

// EventsV1 returns the strategy of events.k8s.io/v1 events. Upstream
// stores both event APIs in one place and converts; Kite keeps the
// events.k8s.io objects under their own key prefix, so an event written
// through one API is not seen through the other.
func EventsV1() *registry.Strategy {
	return &registry.Strategy{
		Kind:          eventsv1.SchemeGroupVersion.WithKind("Event"),
		Resource:      "events",
		SingularName:  "event",
		ShortNames:    []string{"ev"},
		Namespaced:    true,
		StoragePrefix: "events.k8s.io/events",
		New:           func() runtime.Object { return &eventsv1.Event{} },
		NewList:       func() runtime.Object { return &eventsv1.EventList{} },
		Validate: func(obj runtime.Object) field.ErrorList {
			ev := obj.(*eventsv1.Event)
			errs := field.ErrorList{}
			if ev.EventTime.IsZero() {
				errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
			}
			if ev.ReportingController == "" {
				errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
			}
			if ev.ReportingInstance == "" {
				errs = append(errs, field.Required(field.NewPath("reportingInstance"), ""))
			}
			if ev.Action == "" {
				errs = append(errs, field.Required(field.NewPath("action"), ""))
			}
			if ev.Reason == "" {
				errs = append(errs, field.Required(field.NewPath("reason"), ""))
			}
			return errs
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			ev := obj.(*eventsv1.Event)
			return fields.Set{
				"regarding.kind":      ev.Regarding.Kind,
				"regarding.namespace": ev.Regarding.Namespace,
				"regarding.name":      ev.Regarding.Name,
				"reason":              ev.Reason,
				"reportingController": ev.ReportingController,
				"type":                ev.Type,
			}
		},
		FieldLabels:              []string{"regarding.kind", "regarding.namespace", "regarding.name", "reason", "reportingController", "type"},
		AllowUnconditionalUpdate: true,
		TTL:                      func(runtime.Object) uint64 { return uint64(EventTTL / time.Second) },
	}
}
