package validation

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateEvent(t *testing.T) {
	now := metav1.NewMicroTime(time.Now())
	cases := []struct {
		name string
		ev   corev1.Event
		want []want
	}{
		{"old-style event in the object's namespace", corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "web.17a", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		}, nil},
		{"node event in default", corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "node-1.17a", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-1"},
		}, nil},
		{"namespace disagrees with object", corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "web.17a", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "other", Name: "web"},
		}, []want{{field.ErrorTypeInvalid, "involvedObject.namespace"}}},
		{"new-style event needs reporting fields", corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "web.17a", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
			EventTime:      now,
		}, []want{
			// An empty qualified name gets two messages upstream too.
			{field.ErrorTypeRequired, "reportingComponent"}, {field.ErrorTypeInvalid, "reportingComponent"}, {field.ErrorTypeInvalid, "reportingComponent"},
			{field.ErrorTypeRequired, "reportingInstance"}, {field.ErrorTypeRequired, "action"}, {field.ErrorTypeRequired, "reason"},
		}},
		{"name must be a path segment", corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "a/b", Namespace: "default"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		}, []want{{field.ErrorTypeInvalid, "metadata.name"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateEvent(&tc.ev), tc.want...)
		})
	}
}

func validEventV1() *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "web.17a", Namespace: "default"},
		EventTime:           metav1.NewMicroTime(time.Now()),
		ReportingController: "kite.io/agent",
		ReportingInstance:   "agent-node-1",
		Action:              "Pulling",
		Reason:              "Pulled",
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Note:                "pulled image",
		Type:                corev1.EventTypeNormal,
	}
}

func TestValidateEventV1(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*eventsv1.Event)
		want   []want
	}{
		{"valid", func(*eventsv1.Event) {}, nil},
		{"eventTime required", func(e *eventsv1.Event) { e.EventTime = metav1.MicroTime{} },
			[]want{{field.ErrorTypeRequired, "eventTime"}}},
		{"type must be Normal or Warning", func(e *eventsv1.Event) { e.Type = "Info" },
			[]want{{field.ErrorTypeInvalid, "type"}}},
		{"reportingController required", func(e *eventsv1.Event) { e.ReportingController = "" },
			[]want{{field.ErrorTypeRequired, "reportingController"}, {field.ErrorTypeInvalid, "reportingController"}, {field.ErrorTypeInvalid, "reportingController"}}},
		{"note too long is reported as message", func(e *eventsv1.Event) { e.Note = strings.Repeat("x", NoteLengthLimit+1) },
			[]want{{field.ErrorTypeInvalid, "message"}}},
		{"deprecated count must be unset", func(e *eventsv1.Event) { e.DeprecatedCount = 3 },
			[]want{{field.ErrorTypeInvalid, "count"}}},
		{"series count at least 2", func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 1, LastObservedTime: metav1.NewMicroTime(time.Now())}
		}, []want{{field.ErrorTypeInvalid, "series.count"}}},
		{"name must be a DNS subdomain", func(e *eventsv1.Event) { e.Name = "Web_1" },
			[]want{{field.ErrorTypeInvalid, "metadata.name"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := validEventV1()
			tc.mutate(ev)
			checkErrors(t, ValidateEventV1(ev), tc.want...)
		})
	}
}

func TestValidateEventV1Update(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*eventsv1.Event)
		want   []want
	}{
		{"series may change", func(e *eventsv1.Event) {
			e.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(time.Now())}
		}, nil},
		{"note is immutable", func(e *eventsv1.Event) { e.Note = "other" },
			[]want{{field.ErrorTypeInvalid, "message"}}},
		{"regarding is immutable", func(e *eventsv1.Event) { e.Regarding.Name = "other" },
			[]want{{field.ErrorTypeInvalid, "involvedObject"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validEventV1()
			old.ResourceVersion = "1"
			ev := old.DeepCopy()
			tc.mutate(ev)
			checkErrors(t, ValidateEventV1Update(ev, old), tc.want...)
		})
	}
}
