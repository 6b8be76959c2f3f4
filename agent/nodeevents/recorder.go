// Package nodeevents writes the agent's events: the problems that its pod
// sources find (a manifest that does not parse, a URL that fails, a
// duplicate pod) as Warning events on the agent's Node, and the events of
// its pods' lives (Created, Started, Killing, BackOff, Unhealthy, ...) on
// the pods, as the kubelet records them, so that `kubectl describe node`,
// `kubectl describe pod` and `kubectl get events` show them.
//
// Recording never blocks the caller: events are queued and one goroutine,
// owned by Run, writes them. When the queue is full, or the API server is
// unreachable, an event is dropped (the caller has logged what happened).
// Repeats of one event (same object, reason and message) update the count
// of one Event, as client-go's event correlator does, rather than piling up
// new objects.
package nodeevents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/kubetypes"
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
	client corev1client.EventsGetter
	node   string
	now    func() time.Time
	queue  chan item
}

// item is one event to write: about ref, in namespace; key identifies
// repeats.
type item struct {
	ref               v1.ObjectReference
	namespace         string
	eventType, reason string
	message, key      string
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
	return &Recorder{client: opts.Client, node: opts.NodeName, now: now, queue: make(chan item, queueSize)}, nil
}

// ReportProblem queues p as a Warning on the Node, or drops it when the
// queue is full.
func (r *Recorder) ReportProblem(p kubetypes.Problem) {
	msg := p.String()
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	r.enqueue(item{
		// The kubelet names its node by UID = node name in its events.
		ref:       v1.ObjectReference{Kind: "Node", Name: r.node, UID: types.UID(r.node), APIVersion: "v1"},
		namespace: metav1.NamespaceDefault, eventType: v1.EventTypeWarning, reason: p.Reason, message: msg,
		key: p.Source + "\x00" + p.Reason + "\x00" + p.Where,
	})
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
	msg := fmt.Sprintf(messageFmt, args...)
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	r.enqueue(item{ref: ref, namespace: pod.Namespace, eventType: eventType, reason: reason, message: msg,
		key: string(pod.UID) + "\x00" + ref.FieldPath + "\x00" + reason + "\x00" + msg})
}

func (r *Recorder) enqueue(it item) {
	select {
	case r.queue <- it:
	default:
	}
}

// Run writes queued problems as events until ctx ends.
func (r *Recorder) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case it := <-r.queue:
			if err := r.record(ctx, it); err != nil && ctx.Err() == nil {
				logger.V(2).Info("Could not record an event", "object", it.ref.Kind+" "+it.ref.Namespace+"/"+it.ref.Name, "reason", it.reason, "err", err)
			}
		}
	}
}

// record creates the Event of it, or bumps its count if it exists.
func (r *Recorder) record(ctx context.Context, it item) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	events := r.client.Events(it.namespace)
	ev := r.event(it)
	_, err := events.Create(ctx, ev, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	old, err := events.Get(ctx, ev.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	old.Count++
	old.LastTimestamp = ev.LastTimestamp
	old.Message = ev.Message
	_, err = events.Update(ctx, old, metav1.UpdateOptions{})
	return err
}

// event is the Event for it. Its name is fixed by the object and key, so
// a repeat finds it.
func (r *Recorder) event(it item) *v1.Event {
	now := metav1.NewTime(r.now())
	sum := sha256.Sum256([]byte(it.key))
	name := it.ref.Name
	if it.ref.Kind == "Node" {
		name = r.node
	}
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name + "." + hex.EncodeToString(sum[:8]), Namespace: it.namespace},
		InvolvedObject: it.ref,
		Reason:         it.reason,
		Message:        it.message,
		Source:         v1.EventSource{Component: Component, Host: r.node},
		// As client-go's recorder fills them from the source.
		ReportingController: Component,
		ReportingInstance:   r.node,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                it.eventType,
	}
}
