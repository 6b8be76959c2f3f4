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
	"k8s.io/utils/clock"
)

// liveWatch is an open watch with the deadline after which the Reflector
// ends it itself.
type liveWatch struct {
	w        watch.Interface
	deadline clock.Timer
	// ordered is false while the watch may still send the synthetic ADDED
	// events of a watch from "" or "0", whose resourceVersions are in no
	// order and not resumable; the first other event ends that phase.
	ordered bool
}

func (l *liveWatch) stop() {
	l.w.Stop()
	l.deadline.Stop()
}

// watchOptions are the options of a watch from rv, with a random timeout
// in [MinWatchTimeout, MaxWatchTimeout) so that watches of many clients
// do not all end together.
func (r *Reflector) watchOptions(rv string) metav1.ListOptions {
	timeout := r.minWatch + time.Duration(r.rand()*float64(r.maxWatch-r.minWatch))
	timeoutSeconds := int64(timeout / time.Second)
	return metav1.ListOptions{
		ResourceVersion:     rv,
		TimeoutSeconds:      &timeoutSeconds,
		AllowWatchBookmarks: true,
	}
}

// open starts a watch with opts.
func (r *Reflector) open(ctx context.Context, opts metav1.ListOptions) (*liveWatch, error) {
	w, err := r.lw.Watch(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("watch %s from resourceVersion %q: %w", r.name, opts.ResourceVersion, err)
	}
	// The server ends the watch at its timeout; end it ourselves a little
	// later in case the server ignores TimeoutSeconds or the connection
	// died without a word, and resume from the last resourceVersion.
	timeout := time.Duration(*opts.TimeoutSeconds)*time.Second + watchTimeoutGrace
	return &liveWatch{
		w:        w,
		deadline: r.clock.NewTimer(timeout),
		ordered:  opts.ResourceVersion != "" && opts.ResourceVersion != "0",
	}, nil
}

// watch applies the events of lw, or of a new watch from the last
// resourceVersion when lw is nil, to the store until it ends. It returns
// how many events it applied, and nil when the watch ended cleanly (the
// server closed it, as at its timeout), the error of an error event, or
// the error of opening it.
func (r *Reflector) watch(ctx context.Context, lw *liveWatch) (int, error) {
	if lw == nil {
		var err error
		if lw, err = r.open(ctx, r.watchOptions(r.LastSyncResourceVersion())); err != nil {
			return 0, err
		}
	}
	defer lw.stop()
	n, _, err := r.consume(ctx, lw, r.store, false)
	return n, err
}

// consume applies lw's events to store until lw ends, an error event
// comes, the deadline fires, or ctx ends. With untilInitialEnd, it returns
// at the bookmark that ends the initial events of a streaming list,
// leaving lw open, with that bookmark's resourceVersion; it does not then
// advance the Reflector's resourceVersion.
func (r *Reflector) consume(ctx context.Context, lw *liveWatch, store Store, untilInitialEnd bool) (int, string, error) {
	logger := klog.FromContext(ctx)
	updater, _ := store.(ResourceVersionUpdater)
	n := 0
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return n, "", ctx.Err()
		case <-lw.deadline.C():
			logger.V(4).Info("Watch outlived its timeout, ending it", "events", n)
			return n, "", nil
		case ev, ok = <-lw.w.ResultChan():
		}
		if !ok {
			return n, "", nil
		}
		if ev.Type == watch.Error {
			return n, "", fmt.Errorf("watch %s: error event: %w", r.name, apierrors.FromObject(ev.Object))
		}
		if ev.Object == nil {
			logger.Info("Watch event without object, skipped", "event", ev.Type)
			continue
		}
		if r.expType != nil && reflect.TypeOf(ev.Object) != r.expType {
			logger.Info("Watch event of unexpected type, skipped", "event", ev.Type, "got", reflect.TypeOf(ev.Object))
			continue
		}
		if r.expGVK != nil && ev.Type != watch.Bookmark && ev.Object.GetObjectKind().GroupVersionKind() != *r.expGVK {
			logger.Info("Watch event of unexpected kind, skipped", "event", ev.Type, "got", ev.Object.GetObjectKind().GroupVersionKind())
			continue
		}
		rv := resourceVersionOf(ev.Object)
		var err error
		switch ev.Type {
		case watch.Added:
			err = store.Add(ev.Object)
		case watch.Modified:
			lw.ordered = true
			err = store.Update(ev.Object)
		case watch.Deleted:
			lw.ordered = true
			err = store.Delete(ev.Object)
		case watch.Bookmark:
			lw.ordered = true
			if untilInitialEnd && isInitialEventsEnd(ev) {
				return n + 1, rv, nil
			}
			if updater != nil && rv != "" {
				updater.UpdateResourceVersion(rv)
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
		if lw.ordered && rv != "" && !untilInitialEnd {
			r.setLastRV(rv)
		}
	}
}
