package table

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Upstream stores core/v1 and events.k8s.io/v1 Events as one internal type
// and prints both with one printer; here an events.k8s.io Event is mapped
// to the core fields it converts to (pkg/apis/events/v1 conversion).
func registerEvents(c *Convertor) {
	c.register(eventPrinter, &corev1.Event{}, &corev1.EventList{})
	c.register(eventPrinter, &eventsv1.Event{}, &eventsv1.EventList{})
}

var eventPrinter = &printer{
	columns: []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: corev1.Event{}.SwaggerDoc()["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: corev1.Event{}.SwaggerDoc()["type"]},
		{Name: "Reason", Type: "string", Description: corev1.Event{}.SwaggerDoc()["reason"]},
		{Name: "Object", Type: "string", Description: corev1.Event{}.SwaggerDoc()["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["source"]},
		{Name: "Message", Type: "string", Description: corev1.Event{}.SwaggerDoc()["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["count"]},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: objectMetaDoc["name"]},
	},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		switch e := obj.(type) {
		case *corev1.Event:
			return eventRow(e, now), nil
		case *eventsv1.Event:
			return eventRow(coreEvent(e), now), nil
		}
		return nil, nil
	},
}

func eventRow(e *corev1.Event, now time.Time) []any {
	first := age(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = microAge(e.EventTime, now)
	}
	last := age(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	switch {
	case e.Series != nil:
		last = microAge(e.Series.LastObservedTime, now)
		count = e.Series.Count
	case count == 0:
		count = 1 // singleton events of the new API carry no count
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target = fmt.Sprintf("%s/%s", target, e.InvolvedObject.Name)
	}
	return []any{
		last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath,
		eventSource(e.Source, e.ReportingController, e.ReportingInstance),
		strings.TrimSpace(e.Message), first, int64(count), e.Name,
	}
}

// eventSource is "component, host", each falling back to the reporting
// controller and instance, the host left out when empty.
func eventSource(src corev1.EventSource, controller, instance string) string {
	component, host := src.Component, src.Host
	if component == "" {
		component = controller
	}
	if host == "" {
		host = instance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}

func coreEvent(e *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		ObjectMeta:          e.ObjectMeta,
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		out.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}
