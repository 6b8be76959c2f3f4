// Package events records what controllers do as core/v1 Events, the way
// client-go's event recorder does for kube-controller-manager and
// kube-scheduler: an Event names the object, a reason and a message, and
// is written by an eventwriter.Writer, which counts repeats, combines
// similar events and drops a source's spam as client-go's correlator does.
//
// Writes happen on the Recorder's own goroutine (Run), so a controller never
// waits for one; when more than a thousand are pending, new ones are
// dropped, as client-go drops them.
package events

import (
	"context"
	"fmt"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/eventwriter"
)

// Options configure a Recorder.
type Options struct {
	// Client writes the events. Required.
	Client kubernetes.Interface
	// Component is the source component and reporting controller, e.g.
	// "default-scheduler" or "node-controller". Required.
	Component string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Recorder writes events. Event may be called from any goroutine; Run
// does the writes.
type Recorder struct {
	component string
	instance  string
	now       func() time.Time
	writer    *eventwriter.Writer
}

// New returns a Recorder; events queue up until Run.
func New(opts Options) *Recorder {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	host, _ := os.Hostname()
	return &Recorder{
		component: opts.Component, instance: opts.Component + "-" + host, now: opts.Now,
		writer: eventwriter.New(eventwriter.Options{Client: opts.Client.CoreV1(), Now: opts.Now}),
	}
}

// Event records an event about obj of type v1.EventTypeNormal or
// v1.EventTypeWarning. kind is obj's kind ("Pod", "Node").
func (r *Recorder) Event(obj metav1.Object, kind, eventType, reason, message string) {
	now := metav1.NewTime(r.now())
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault // events of cluster-scoped objects
	}
	if len(message) > 1024 {
		message = message[:1020] + " ..."
	}
	r.writer.Write(&v1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", obj.GetName(), now.UnixNano()), Namespace: ns},
		InvolvedObject: v1.ObjectReference{
			Kind: kind, APIVersion: apiVersionOf(kind), Namespace: obj.GetNamespace(), Name: obj.GetName(),
			UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
		},
		Reason: reason, Message: message, Type: eventType,
		Source:         v1.EventSource{Component: r.component},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: r.component, ReportingInstance: r.instance,
	})
}

// Run writes queued events until ctx ends.
func (r *Recorder) Run(ctx context.Context) { r.writer.Run(ctx) }

// apiVersionOf is the group version of the kinds controllers record events
// about, for the involved object's apiVersion as client-go's
// reference.GetReference fills it.
func apiVersionOf(kind string) string {
	switch kind {
	case "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ControllerRevision":
		return "apps/v1"
	case "Job", "CronJob":
		return "batch/v1"
	case "PodDisruptionBudget":
		return "policy/v1"
	case "HorizontalPodAutoscaler":
		return "autoscaling/v2"
	}
	return "v1"
}
