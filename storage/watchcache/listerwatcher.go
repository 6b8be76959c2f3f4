package watchcache

import (
	"context"
	"time"

	"github.com/kite-project/kite/storage/etcd"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// storeListerWatcher is how the cache's Reflector sees the store: every
// list is a consistent read of the whole resource (whatever the Reflector
// asks, as upstream's cacher does), every watch covers the whole resource
// with progress notifications, so that bookmarks carry etcd's current
// revision even when the resource does not change.
type storeListerWatcher struct {
	store   storage.Interface
	prefix  string
	newList func() runtime.Object
}

// objectLists is a store whose GetList fills an etcd.ObjectList: the etcd
// store, and wrappers that pass lists through to it.
type objectLists interface{ FillsObjectLists() bool }

func (l *storeListerWatcher) List(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	list := l.newList()
	if o, ok := l.store.(objectLists); ok && o.FillsObjectLists() {
		// The cache keeps every object of its list: decoded one by one
		// into their own allocations they need no copying out of a
		// typed list's array (which the Reflector would do).
		list = &etcd.ObjectList{}
	}
	err := l.store.GetList(ctx, l.prefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list)
	return list, err
}

func (l *storeListerWatcher) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	cancel := context.CancelFunc(func() {})
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		// Renewing the etcd watch now and then bounds the damage of a
		// silently broken stream; the cache's watchers do not notice.
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*opts.TimeoutSeconds)*time.Second)
	}
	pred := storage.Everything
	pred.AllowWatchBookmarks = true
	w, err := l.store.Watch(ctx, l.prefix, storage.ListOptions{
		ResourceVersion: opts.ResourceVersion,
		Recursive:       true,
		ProgressNotify:  true,
		Predicate:       pred,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return cancelOnStop{Interface: w, cancel: cancel}, nil
}

type cancelOnStop struct {
	watch.Interface
	cancel context.CancelFunc
}

func (w cancelOnStop) Stop() {
	w.Interface.Stop()
	w.cancel()
}
