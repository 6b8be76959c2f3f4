package builtin

import (
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/apis/core/validation"
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
		Kind:              v1.SchemeGroupVersion.WithKind("Event"),
		Resource:          "events",
		SingularName:      "event",
		ShortNames:        []string{"ev"},
		Namespaced:        true,
		New:               func() runtime.Object { return &v1.Event{} },
		NewList:           func() runtime.Object { return &v1.EventList{} },
		ValidatesMetadata: true,
		Validate:          func(obj runtime.Object) field.ErrorList { return validation.ValidateEvent(obj.(*v1.Event)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateEventUpdate(obj.(*v1.Event), old.(*v1.Event))
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
		AllowCreateOnUpdate:      true, // as upstream: recorders PUT events that may be gone
		TTL:                      func(runtime.Object) uint64 { return uint64(EventTTL / time.Second) },
	}
}

// EventsV1 returns the strategy of events.k8s.io/v1 events. As upstream,
// they are the core/v1 events, seen through the newer API: stored with
// them and converted field by field.
func EventsV1() *registry.Strategy {
	return &registry.Strategy{
		Kind:         eventsv1.SchemeGroupVersion.WithKind("Event"),
		Resource:     "events",
		SingularName: "event",
		ShortNames:   []string{"ev"},
		Namespaced:   true,
		StoredWith:   v1.Resource("events"),
		Conversion: &registry.Conversion{
			ToStored:      func(obj runtime.Object) (runtime.Object, error) { return eventToCore(obj.(*eventsv1.Event)), nil },
			FromStored:    func(obj runtime.Object) (runtime.Object, error) { return eventFromCore(obj.(*v1.Event)), nil },
			NewStored:     func() runtime.Object { return &v1.Event{} },
			NewStoredList: func() runtime.Object { return &v1.EventList{} },
		},
		New:               func() runtime.Object { return &eventsv1.Event{} },
		NewList:           func() runtime.Object { return &eventsv1.EventList{} },
		ValidatesMetadata: true,
		Validate:          func(obj runtime.Object) field.ErrorList { return validation.ValidateEventV1(obj.(*eventsv1.Event)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateEventV1Update(obj.(*eventsv1.Event), old.(*eventsv1.Event))
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
		AllowCreateOnUpdate:      true, // as upstream: recorders PUT events that may be gone
		TTL:                      func(runtime.Object) uint64 { return uint64(EventTTL / time.Second) },
	}
}

// eventFromCore is upstream's conversion of a core event to
// events.k8s.io/v1 (pkg/apis/events/v1/conversion.go).
func eventFromCore(in *v1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		ObjectMeta:               *in.ObjectMeta.DeepCopy(),
		EventTime:                in.EventTime,
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp:  in.LastTimestamp,
		DeprecatedCount:          in.Count,
	}
	if in.Related != nil {
		related := *in.Related
		out.Related = &related
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}

// eventToCore is the reverse of eventFromCore.
func eventToCore(in *eventsv1.Event) *v1.Event {
	out := &v1.Event{
		ObjectMeta:          *in.ObjectMeta.DeepCopy(),
		EventTime:           in.EventTime,
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
		Action:              in.Action,
		Reason:              in.Reason,
		InvolvedObject:      in.Regarding,
		Message:             in.Note,
		Type:                in.Type,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      in.DeprecatedFirstTimestamp,
		LastTimestamp:       in.DeprecatedLastTimestamp,
		Count:               in.DeprecatedCount,
	}
	if in.Related != nil {
		related := *in.Related
		out.Related = &related
	}
	if in.Series != nil {
		out.Series = &v1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}
