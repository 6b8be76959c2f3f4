// Package eventwriter writes core/v1 Events for the API's clients, the
// controllers and the node agent, as client-go's event broadcaster writes
// them for kube-controller-manager, kube-scheduler and the kubelet. Events
// pass through client-go's EventCorrelator (upstream's own library, so the
// counts and drops a user sees are upstream's):
//
//   - a repeat of an event (same source, object, type, reason and message)
//     raises the first one's count by a strategic-merge patch;
//   - the eleventh similar event about one object within ten minutes
//     (differing only in message) becomes one event whose message says
//     "(combined from similar events)";
//   - a source may write a burst of 25 events about one object, then one
//     every five minutes; the rest are dropped.
//
// Writing never blocks the caller: events queue, and one goroutine, owned
// by Run, correlates and writes them. When the queue is full, or a write
// fails, the event is dropped (client-go retries transport errors a few
// times; here the caller's own log says what happened).
package eventwriter

import (
	"context"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// DefaultQueueSize is client-go's bound on events waiting to be written.
const DefaultQueueSize = 1000

// Options configure a Writer.
type Options struct {
	// Client writes the events. Required.
	Client corev1client.EventsGetter
	// Now is the clock of the correlator's windows and rate limits; nil
	// means time.Now.
	Now func() time.Time
	// QueueSize bounds the events waiting to be written; 0 means
	// DefaultQueueSize.
	QueueSize int
}

// Writer queues events and writes them. Write may be called from any
// goroutine; Run does the writes.
type Writer struct {
	client corev1client.EventsGetter
	queue  chan *v1.Event
	// correlator is used by Run's goroutine only.
	correlator *record.EventCorrelator
	// logger is Run's context's, for Write's drops (Write has no
	// context); nil until Run starts.
	logger atomic.Pointer[klog.Logger]
}

// New returns a Writer; events queue up until Run.
func New(opts Options) *Writer {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	size := opts.QueueSize
	if size <= 0 {
		size = DefaultQueueSize
	}
	return &Writer{
		client:     opts.Client,
		queue:      make(chan *v1.Event, size),
		correlator: record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{Clock: passiveClock(now)}),
	}
}

// Write queues ev, a complete Event (name, namespace, involved object,
// source, timestamps, count 1), and reports whether it was queued; it is
// dropped when the queue is full. ev must not be changed afterwards.
func (w *Writer) Write(ev *v1.Event) bool {
	select {
	case w.queue <- ev:
		return true
	default:
		if logger := w.logger.Load(); logger != nil {
			logger.V(2).Info("Dropped an event: too many pending", "object", klog.KRef(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name), "reason", ev.Reason)
		}
		return false
	}
}

// Run writes queued events until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	w.logger.Store(&logger)
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-w.queue:
			if err := w.write(ctx, ev); err != nil && ctx.Err() == nil {
				logger.V(2).Info("Could not write an event", "object", klog.KRef(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name), "reason", ev.Reason, "err", err)
			}
		}
	}
}

// write does what client-go's recordToSink does for one event: correlate,
// then patch the count of the event it repeats, or create it.
func (w *Writer) write(ctx context.Context, ev *v1.Event) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := w.correlator.EventCorrelate(ev)
	if err != nil {
		// As client-go: the patch could not be made; the event is still
		// written, as a new one.
		klog.FromContext(ctx).V(4).Info("Could not correlate an event", "reason", ev.Reason, "err", err)
	}
	if res.Skip {
		return nil
	}
	events := w.client.Events(res.Event.Namespace)
	var out *v1.Event
	repeat := res.Event.Count > 1 && len(res.Patch) > 0
	if repeat {
		out, err = events.Patch(ctx, res.Event.Name, types.StrategicMergePatchType, res.Patch, metav1.PatchOptions{})
	}
	if !repeat || apierrors.IsNotFound(err) {
		// Gone (expired or deleted) since: write it anew.
		created := res.Event.DeepCopy()
		created.ResourceVersion = ""
		out, err = events.Create(ctx, created, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	w.correlator.UpdateState(out)
	return nil
}

// passiveClock is a func as the correlator's clock.
type passiveClock func() time.Time

func (c passiveClock) Now() time.Time                  { return c() }
func (c passiveClock) Since(t time.Time) time.Duration { return c().Sub(t) }
