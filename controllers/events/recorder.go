// Package events records what controllers do as core/v1 Events, the way
// client-go's event broadcaster does for kube-controller-manager and
// kube-scheduler: an Event names the object, a reason and a message; a
// repeat of the same event (same object, type, reason and message) within
// ten minutes raises the first one's count instead of adding another.
//
// Writes happen on the Recorder's own goroutine (Run), so a controller never
// waits for one; when more than a thousand are pending, new ones are
// dropped, as client-go drops them.
package events

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

const (
	pending = 1000
	// repeatWindow is how long a repeated event raises its first one's
	// count (client-go's EventCorrelator keeps its cache that long).
	repeatWindow = 10 * time.Minute
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
	client    kubernetes.Interface
	component string
	instance  string
	now       func() time.Time
	queue     chan *v1.Event
	// seen is owned by Run's goroutine: the event written for each
	// (object, type, reason, message), to count repeats.
	seen map[repeatKey]*v1.Event
	// logger is Run's context's, for Event's drops (Event has no
	// context); nil until Run starts.
	logger atomic.Pointer[klog.Logger]
}

type repeatKey struct {
	uid                   types.UID
	kind, namespace, name string
	typ, reason, message  string
}

// New returns a Recorder; events queue up until Run.
func New(opts Options) *Recorder {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	host, _ := os.Hostname()
	return &Recorder{
		client: opts.Client, component: opts.Component, instance: opts.Component + "-" + host,
		now: opts.Now, queue: make(chan *v1.Event, pending), seen: map[repeatKey]*v1.Event{},
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
	apiVersion := "v1"
	ev := &v1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", obj.GetName(), now.UnixNano()), Namespace: ns},
		InvolvedObject: v1.ObjectReference{
			Kind: kind, APIVersion: apiVersion, Namespace: obj.GetNamespace(), Name: obj.GetName(),
			UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion(),
		},
		Reason: reason, Message: message, Type: eventType,
		Source:         v1.EventSource{Component: r.component},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: r.component, ReportingInstance: r.instance,
	}
	select {
	case r.queue <- ev:
	default:
		if logger := r.logger.Load(); logger != nil {
			logger.V(2).Info("Dropped an event: too many pending", "object", klog.KObj(obj), "reason", reason)
		}
	}
}

// Run writes queued events until ctx ends.
func (r *Recorder) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	r.logger.Store(&logger)
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-r.queue:
			if err := r.write(ctx, ev); err != nil && ctx.Err() == nil {
				logger.V(2).Info("Could not write an event", "object", ev.InvolvedObject.Name, "reason", ev.Reason, "err", err)
			}
		}
	}
}

func (r *Recorder) write(ctx context.Context, ev *v1.Event) error {
	o := ev.InvolvedObject
	key := repeatKey{o.UID, o.Kind, o.Namespace, o.Name, ev.Type, ev.Reason, ev.Message}
	events := r.client.CoreV1().Events(ev.Namespace)
	if prev, ok := r.seen[key]; ok && ev.LastTimestamp.Sub(prev.FirstTimestamp.Time) < repeatWindow {
		next := prev.DeepCopy()
		next.Count++
		next.LastTimestamp = ev.LastTimestamp
		updated, err := events.Update(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			r.seen[key] = updated
			return nil
		}
		if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
		// Gone or changed under us: start a new one.
	}
	if len(r.seen) > 4096 {
		r.forgetOld(ev.LastTimestamp.Time)
	}
	created, err := events.Create(ctx, ev, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	r.seen[key] = created
	return nil
}

func (r *Recorder) forgetOld(now time.Time) {
	for k, ev := range r.seen {
		if now.Sub(ev.FirstTimestamp.Time) >= repeatWindow {
			delete(r.seen, k)
		}
	}
}
