package listwatch

import (
	"context"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// watch opens one watch from the last resourceVersion and applies its
// events to the store until it ends. It returns how many events it
// applied, and nil when the watch ended cleanly (the server closed it, as
// at its timeout), the error of an error event, or the error of opening it.
func (r *Reflector) watch(ctx context.Context) (int, error) {
	rv := r.LastSyncResourceVersion()
	timeout := r.minWatch + time.Duration(r.rand()*float64(r.maxWatch-r.minWatch))
	timeoutSeconds := int64(timeout / time.Second)
	opts := metav1.ListOptions{
		ResourceVersion:     rv,
		TimeoutSeconds:      &timeoutSeconds,
		AllowWatchBookmarks: true,
	}
	w, err := r.lw.Watch(ctx, opts)
	if err != nil {
		return 0, fmt.Errorf("watch %s from resourceVersion %q: %w", r.name, rv, err)
	}
	defer w.Stop()
	// A watch from "" or "0" starts with synthetic ADDED events in no
	// resourceVersion order; their resourceVersions are not resumable
	// until the first other event shows the initial state is over.
	ordered := rv != "" && rv != "0"
	// The server ends the watch at its timeout; end it ourselves a little
	// later in case the server ignores TimeoutSeconds or the connection
	// died without a word, and resume from the last resourceVersion.
	deadline := r.clock.NewTimer(time.Duration(timeoutSeconds)*time.Second + watchTimeoutGrace)
	defer deadline.Stop()
	return r.consume(ctx, w, ordered, deadline.C())
}

// consume applies w's events to the store until w ends, an error event
// comes, deadline fires, or ctx ends.
func (r *Reflector) consume(ctx context.Context, w watch.Interface, ordered bool, deadline <-chan time.Time) (int, error) {
	logger := klog.FromContext(ctx)
	n := 0
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-deadline:
			logger.V(4).Info("Watch outlived its timeout, ending it", "events", n)
			return n, nil
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return n, nil
		}
		if ev.Type == watch.Error {
			return n, fmt.Errorf("watch %s: error event: %w", r.name, apierrors.FromObject(ev.Object))
		}
		if ev.Object == nil {
			logger.Info("Watch event without object, skipped", "event", ev.Type)
			continue
		}
		if r.expType != nil && reflect.TypeOf(ev.Object) != r.expType {
			logger.Info("Watch event of unexpected type, skipped", "event", ev.Type, "got", reflect.TypeOf(ev.Object))
			continue
		}
		if r.expGVK != nil && ev.Object.GetObjectKind().GroupVersionKind() != *r.expGVK {
			logger.Info("Watch event of unexpected kind, skipped", "event", ev.Type, "got", ev.Object.GetObjectKind().GroupVersionKind())
			continue
		}
		rv := resourceVersionOf(ev.Object)
		var err error
		switch ev.Type {
		case watch.Added:
			err = r.store.Add(ev.Object)
		case watch.Modified:
			ordered = true
			err = r.store.Update(ev.Object)
		case watch.Deleted:
			ordered = true
			err = r.store.Delete(ev.Object)
		case watch.Bookmark:
			ordered = true
			if r.updater != nil && rv != "" {
				r.updater.UpdateResourceVersion(rv)
			}
		default:
			logger.Info("Watch event of unknown type, skipped", "event", ev.Type)
			continue
		}
		if err != nil {
			// The store refused one object; the others still apply, and the
			// next list repairs the store.
			logger.Error(err, "Store refused watch event", "event", ev.Type, "resourceVersion", rv)
		}
		n++
		if ordered && rv != "" {
			r.setLastRV(rv)
		}
	}
}
