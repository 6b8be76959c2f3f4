// Package nodeevents turns the problems that the agent's pod sources find
// (a manifest that does not parse, a URL that fails, a duplicate pod) into
// Warning events on the agent's Node, as the kubelet records them, so that
// `kubectl describe node` and `kubectl get events` show them.
//
// Recording never blocks a source: problems are queued and one goroutine,
// owned by Run, writes them. When the queue is full, or the API server is
// unreachable, a problem is dropped from the events (the source has logged
// it already). Repeats of one problem update the count of one Event, as
// client-go's event correlator does, rather than piling up new objects.
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

// Component is the event source's component, as "kubelet" is upstream's.
const Component = "kite-agent"

// queueSize bounds the problems waiting to be written.
const queueSize = 64

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
// the Node. ReportProblem is safe for concurrent use and never blocks.
type Recorder struct {
	client corev1client.EventsGetter
	node   string
	now    func() time.Time
	queue  chan kubetypes.Problem
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
	return &Recorder{client: opts.Client, node: opts.NodeName, now: now, queue: make(chan kubetypes.Problem, queueSize)}, nil
}

// ReportProblem queues p, or drops it when the queue is full.
func (r *Recorder) ReportProblem(p kubetypes.Problem) {
	select {
	case r.queue <- p:
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
		case p := <-r.queue:
			if err := r.record(ctx, p); err != nil && ctx.Err() == nil {
				logger.V(2).Info("Could not record a Warning event on the node", "problem", p.String(), "err", err)
			}
		}
	}
}

// record creates the Event of p, or bumps its count if it exists.
func (r *Recorder) record(ctx context.Context, p kubetypes.Problem) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	events := r.client.Events(metav1.NamespaceDefault)
	ev := r.event(p)
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

// event is the Event for p. Its name is fixed by the node, reason and
// place, so a repeat finds it.
func (r *Recorder) event(p kubetypes.Problem) *v1.Event {
	now := metav1.NewTime(r.now())
	sum := sha256.Sum256([]byte(p.Source + "\x00" + p.Reason + "\x00" + p.Where))
	msg := p.String()
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	return &v1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      r.node + "." + hex.EncodeToString(sum[:8]),
			Namespace: metav1.NamespaceDefault,
		},
		// The kubelet names its node by UID = node name in its events.
		InvolvedObject: v1.ObjectReference{Kind: "Node", Name: r.node, UID: types.UID(r.node), APIVersion: "v1"},
		Reason:         p.Reason,
		Message:        msg,
		Source:         v1.EventSource{Component: Component, Host: r.node},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Type:           v1.EventTypeWarning,
	}
}
