// Package nodeevents writes the agent's events: the problems that its pod
// sources find (a manifest that does not parse, a URL that fails, a
// duplicate pod) as Warning events on the agent's Node, and the events of
// its pods' lives (Created, Started, Killing, BackOff, Unhealthy, ...) on
// the pods, as the kubelet records them, so that `kubectl describe node`,
// `kubectl describe pod` and `kubectl get events` show them.
//
// Recording never blocks the caller: events are queued and one goroutine,
// owned by Run, writes them through an eventwriter.Writer, which counts
// repeats, combines similar events and drops spam as the kubelet's
// client-go recorder does. When the queue is full, or the API server is
// unreachable, an event is dropped (the caller has logged what happened).
package nodeevents

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/eventwriter"
)

// Component is the event source's component. It is upstream's "kubelet":
// `kubectl describe` shows it as From, and tools select the node agent's
// events by it (`--field-selector source=kubelet`).
const Component = "kubelet"

// queueSize bounds the events waiting to be written: a node starting
// 110 pods at once records about four events for each.
const queueSize = 1024

// Options configures a Recorder.
type Options struct {
	// Client writes the events. Required.
	Client corev1client.EventsGetter
	// NodeName is the node the events are about. Required.
	NodeName string
	// Now is the clock of event timestamps; time.Now when nil.
	Now func() time.Time
}

// Recorder is a kubetypes.ProblemReporter that records Warning events on
// the Node, and the recorder of pod events. Its methods are safe for
// concurrent use and never block.
type Recorder struct {
	node   string
	now    func() time.Time
	writer *eventwriter.Writer
}

var _ kubetypes.ProblemReporter = (*Recorder)(nil)

// New returns a Recorder; nothing is written until Run.
func New(opts Options) (*Recorder, error) {
	if opts.Client == nil || opts.NodeName == "" {
		return nil, fmt.Errorf("nodeevents: client and node name are required")
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Recorder{node: opts.NodeName, now: now,
		writer: eventwriter.New(eventwriter.Options{Client: opts.Client, Now: now, QueueSize: queueSize})}, nil
}

// ReportProblem queues p as a Warning on the Node, or drops it when the
// queue is full.
func (r *Recorder) ReportProblem(p kubetypes.Problem) {
	// The kubelet names its node by UID = node name in its events.
	ref := v1.ObjectReference{Kind: "Node", Name: r.node, UID: types.UID(r.node), APIVersion: "v1"}
	r.record(ref, metav1.NamespaceDefault, v1.EventTypeWarning, p.Reason, p.String())
}

// Eventf queues an event about pod, as client-go's EventRecorder.Eventf.
func (r *Recorder) Eventf(pod *v1.Pod, eventType, reason, messageFmt string, args ...any) {
	r.ContainerEventf(pod, "", eventType, reason, messageFmt, args...)
}

// ContainerEventf queues an event about one of pod's containers; its
// involvedObject.fieldPath is spec.containers{name} (or
// spec.initContainers{name}), as the kubelet's container references.
func (r *Recorder) ContainerEventf(pod *v1.Pod, container, eventType, reason, messageFmt string, args ...any) {
	ref := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion}
	if container != "" {
		ref.FieldPath = "spec.containers{" + container + "}"
		for _, c := range pod.Spec.InitContainers {
			if c.Name == container {
				ref.FieldPath = "spec.initContainers{" + container + "}"
			}
		}
	}
	r.record(ref, pod.Namespace, eventType, reason, fmt.Sprintf(messageFmt, args...))
}

// record queues the Event about ref, named and filled as the kubelet's
// recorder does.
func (r *Recorder) record(ref v1.ObjectReference, namespace, eventType, reason, message string) {
	if len(message) > 1024 {
		message = message[:1024]
	}
	now := metav1.NewTime(r.now())
	r.writer.Write(&v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", ref.Name, now.UnixNano()), Namespace: namespace},
		InvolvedObject: ref,
		Reason:         reason,
		Message:        message,
		Source:         v1.EventSource{Component: Component, Host: r.node},
		// As client-go's recorder fills them from the source.
		ReportingController: Component,
		ReportingInstance:   r.node,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                eventType,
	})
}

// Run writes queued events until ctx ends.
func (r *Recorder) Run(ctx context.Context) { r.writer.Run(ctx) }
