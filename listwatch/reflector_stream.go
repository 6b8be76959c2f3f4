package listwatch

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// errStreamEnded is a streaming list that ended before its last bookmark.
var errStreamEnded = errors.New("watch ended before the bookmark that ends the initial events")

// fill brings the store up to date after start-up or an expired
// resourceVersion: by a streaming list when enabled, which leaves its
// watch open for the caller, else (or when the server refuses it) by a
// list.
func (r *Reflector) fill(ctx context.Context) (*liveWatch, error) {
	if r.streaming {
		lw, err := r.streamList(ctx)
		if err == nil || ctx.Err() != nil {
			return lw, err
		}
		logger := klog.FromContext(ctx)
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			// The server does not know sendInitialEvents: list from now on
			// rather than be refused at every re-list.
			logger.V(2).Info("Streaming list refused, listing instead from now on", "err", err)
			r.streaming = false
		} else {
			logger.V(4).Info("Streaming list failed, listing instead", "err", err)
		}
	}
	return nil, r.list(ctx)
}

// streamList asks for the current state as a watch (sendInitialEvents):
// ADDED events for every object, then a bookmark annotated
// k8s.io/initial-events-end whose resourceVersion is the state's. It
// replaces the store's content with those objects and returns the watch,
// which goes on with the changes that follow. As client-go's, it retries
// by itself when the resourceVersion is unusable (at "" then), on
// connection refused and 429 (after a backoff), and when the stream ends
// early; any other error is the caller's, to fall back to a list.
func (r *Reflector) streamList(ctx context.Context) (*liveWatch, error) {
	for ctx.Err() == nil {
		r.mu.RLock()
		rv := r.lastRV
		if r.lastRVUnavailable {
			rv = ""
		}
		r.mu.RUnlock()
		opts := r.watchOptions(rv)
		send := true
		opts.SendInitialEvents = &send
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		lw, err := r.open(ctx, opts)
		var objs []runtime.Object
		var listRV string
		if err == nil {
			// The initial events go to a store of their own, so that the
			// real one changes in one Replace, as after a list.
			temp := NewIndexer(IndexerOptions[runtime.Object]{})
			lw.ordered = false
			_, listRV, err = r.consume(ctx, lw, temp, true)
			if err == nil && listRV == "" {
				err = errStreamEnded
			}
			if err != nil {
				lw.stop()
			}
			objs = temp.SortedList()
		}
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err == nil:
			if err := r.store.Replace(objs, listRV); err != nil {
				lw.stop()
				return nil, fmt.Errorf("replace store of %s with %d streamed objects at resourceVersion %q: %w", r.name, len(objs), listRV, err)
			}
			r.listed(ctx, listRV, len(objs))
			lw.ordered = true
			return lw, nil
		case isExpired(err) || isTooLargeResourceVersion(err):
			r.mu.Lock()
			r.lastRVUnavailable = true
			r.mu.Unlock()
		case errors.Is(err, errStreamEnded):
			// Try again at once, as client-go does.
		case utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err):
			klog.FromContext(ctx).V(2).Info("Streaming list failed, backing off", "err", err)
			r.wait(ctx, r.delayAfter(err))
		default:
			return nil, err
		}
	}
	return nil, ctx.Err()
}

// isInitialEventsEnd reports the bookmark that ends the initial events of
// a streaming list.
func isInitialEventsEnd(ev watch.Event) bool {
	m, err := metaAccessor(ev.Object)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}
