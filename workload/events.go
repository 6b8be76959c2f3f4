package workload

import (
	"context"
	"fmt"
	"io"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// event is what a fan-out watcher needs of one pod watch event; the two
// decode modes differ only in how they get it.
type event struct {
	typ       watch.EventType
	namespace string
	rv        string // the pod's resourceVersion
	sent      string // the sentAnnotation, "" if the pod has none
}

// eventStream is one open watch. It lives as long as the context it was
// opened with.
type eventStream interface {
	// next blocks until the next event. An error ends the stream: io.EOF
	// when the server closed it, the Status of an ERROR event, a
	// malformed event, or the end of the stream's context.
	next() (event, error)
	// stop ends the stream and releases its connection.
	stop()
}

// watchOpener opens pod watches.
type watchOpener interface {
	open(ctx context.Context, lo metav1.ListOptions) (eventStream, error)
}

// podWatcher is the one method of a pods client that typedWatches needs.
type podWatcher interface {
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// typedWatches opens watches with client-go's typed client, which decodes
// every event into a *v1.Pod (ClientGoDecode).
type typedWatches struct{ pods podWatcher }

var _ watchOpener = typedWatches{}

func (t typedWatches) open(ctx context.Context, lo metav1.ListOptions) (eventStream, error) {
	w, err := t.pods.Watch(ctx, lo)
	if err != nil {
		return nil, fmt.Errorf("watch pods %q from resourceVersion %s: %w", lo.FieldSelector, lo.ResourceVersion, err)
	}
	return typedStream{ctx: ctx, w: w}, nil
}

// typedStream adapts a watch.Interface to eventStream.
type typedStream struct {
	ctx context.Context
	w   watch.Interface
}

func (s typedStream) next() (event, error) {
	for {
		select {
		case <-s.ctx.Done():
			return event{}, s.ctx.Err()
		case ev, ok := <-s.w.ResultChan():
			if !ok {
				return event{}, io.EOF
			}
			if ev.Type == watch.Error {
				return event{}, fmt.Errorf("watch ERROR event: %w", apierrors.FromObject(ev.Object))
			}
			pod, ok := ev.Object.(*v1.Pod)
			if !ok {
				continue
			}
			return event{typ: ev.Type, namespace: pod.Namespace, rv: pod.ResourceVersion, sent: pod.Annotations[sentAnnotation]}, nil
		}
	}
}

func (s typedStream) stop() { s.w.Stop() }
