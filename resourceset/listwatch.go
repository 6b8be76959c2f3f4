package resourceset

import (
	"context"
	"sync"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kite-project/kite/listwatch"
	"github.com/kite-project/kite/registry"
)

// StoreListerWatcher lists and watches a registry Store in process, all
// namespaces, as a client would see it.
func StoreListerWatcher(s *registry.Store) listwatch.ListerWatcher {
	internal := func(opts metav1.ListOptions) (*metainternalversion.ListOptions, error) {
		out := &metainternalversion.ListOptions{}
		err := metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&opts, out, nil)
		return out, err
	}
	return listwatch.ListWatchFuncs{
		ListFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			in, err := internal(opts)
			if err != nil {
				return nil, err
			}
			return s.List(ctx, "", in)
		},
		WatchFunc: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			in, err := internal(opts)
			if err != nil {
				return nil, err
			}
			w, err := s.Watch(ctx, "", in)
			if err != nil {
				return nil, err
			}
			return newUnwrapping(w), nil
		},
	}
}

// unwrapping is a watch whose events carry the objects the watch cache's
// events wrap with their encodings, which is what a Reflector wants.
// (watch.Filter would do, but its goroutine blocks for good on a send
// nobody receives once the watch is stopped.)
type unwrapping struct {
	w    watch.Interface
	out  chan watch.Event
	done chan struct{}
	once sync.Once
}

func newUnwrapping(w watch.Interface) *unwrapping {
	u := &unwrapping{w: w, out: make(chan watch.Event), done: make(chan struct{})}
	go u.run()
	return u
}

// run forwards events until the inner watch ends or Stop.
func (u *unwrapping) run() {
	defer close(u.out)
	for ev := range u.w.ResultChan() {
		if c, ok := ev.Object.(runtime.CacheableObject); ok {
			ev.Object = c.GetObject()
		}
		select {
		case u.out <- ev:
		case <-u.done:
			return
		}
	}
}

func (u *unwrapping) ResultChan() <-chan watch.Event { return u.out }

func (u *unwrapping) Stop() {
	u.once.Do(func() { close(u.done) })
	u.w.Stop()
}
