package chaos

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/workload/chaoscheck"
)

// watcher lists and watches the configmaps of one group, re-watching from
// its last resourceVersion when a stream ends and re-listing after a 410.
type watcher struct {
	client   kubernetes.Interface
	ns       string
	group    int
	restarts *atomic.Int64

	mu     sync.Mutex
	stream chaoscheck.Stream
}

// watchTimeout is each watch's timeoutSeconds.
const watchTimeout = 2 * time.Minute

func (w *watcher) selector() string { return groupLabel + "=" + strconv.Itoa(w.group) }

func (w *watcher) lastRV() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stream.LastRV()
}

func (w *watcher) run(ctx context.Context) {
	listed := false
	for ctx.Err() == nil {
		if !listed {
			if err := w.list(ctx); err != nil {
				pause(ctx, 500*time.Millisecond)
				continue
			}
			listed = true
		}
		gone := w.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		w.restarts.Add(1)
		if gone {
			listed = false
		} else {
			pause(ctx, 100*time.Millisecond)
		}
	}
}

func (w *watcher) list(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	l, err := w.client.CoreV1().ConfigMaps(w.ns).List(rctx, metav1.ListOptions{LabelSelector: w.selector()})
	if err != nil {
		return err
	}
	items := make(map[string]int64, len(l.Items))
	for _, cm := range l.Items {
		items[cm.Name] = parseRV(cm.ResourceVersion)
	}
	w.mu.Lock()
	w.stream.List(parseRV(l.ResourceVersion), items)
	w.mu.Unlock()
	return nil
}

// watch follows one watch from the last resourceVersion until it ends; it
// reports whether it ended in a 410.
func (w *watcher) watch(ctx context.Context) (gone bool) {
	rv := strconv.FormatInt(w.lastRV(), 10)
	// The stream lives as long as ctx, bounded by the server's timeout.
	timeout := int64(watchTimeout / time.Second)
	wi, err := w.client.CoreV1().ConfigMaps(w.ns).Watch(ctx, metav1.ListOptions{LabelSelector: w.selector(), ResourceVersion: rv, TimeoutSeconds: &timeout})
	if err != nil {
		return apierrors.IsGone(err) || apierrors.IsResourceExpired(err)
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case e, ok := <-wi.ResultChan():
			if !ok {
				return false
			}
			switch e.Type {
			case watch.Error:
				err := apierrors.FromObject(e.Object)
				return apierrors.IsGone(err) || apierrors.IsResourceExpired(err)
			case watch.Added, watch.Modified, watch.Deleted:
				cm, ok := e.Object.(*v1.ConfigMap)
				if !ok {
					continue
				}
				w.mu.Lock()
				w.stream.Event(string(e.Type), cm.Name, parseRV(cm.ResourceVersion))
				w.mu.Unlock()
			}
		}
	}
}

func parseRV(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
