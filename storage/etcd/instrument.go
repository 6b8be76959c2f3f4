package kite

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kite-project/kite/apiserver/metrics"
)

// instrumented times every call to the etcd store of one resource, for
// etcd_request_duration_seconds and friends, under upstream's operation
// names. It sits directly on the etcd store, below the watch cache, so
// that it counts what reaches etcd.
type instrumented struct {
	storage.Interface
	m  *metrics.Metrics
	gr schema.GroupResource
}

// FillsObjectLists passes on whether the store's GetList fills an
// etcd.ObjectList (the watch cache asks, for its first list).
func (i *instrumented) FillsObjectLists() bool {
	o, ok := i.Interface.(interface{ FillsObjectLists() bool })
	return ok && o.FillsObjectLists()
}

func (i *instrumented) observe(op string, start time.Time, err error) {
	i.m.EtcdRequest(op, i.gr.Group, i.gr.Resource, start, err)
}

func (i *instrumented) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	start := time.Now()
	err := i.Interface.Create(ctx, key, obj, out, ttl)
	i.observe("create", start, err)
	return err
}

func (i *instrumented) Delete(ctx context.Context, key string, out runtime.Object, pre *storage.Preconditions, v storage.ValidateObjectFunc, cached runtime.Object, opts storage.DeleteOptions) error {
	start := time.Now()
	err := i.Interface.Delete(ctx, key, out, pre, v, cached, opts)
	i.observe("delete", start, err)
	return err
}

func (i *instrumented) Get(ctx context.Context, key string, opts storage.GetOptions, obj runtime.Object) error {
	start := time.Now()
	err := i.Interface.Get(ctx, key, opts, obj)
	if storage.IsNotFound(err) {
		i.observe("get", start, nil) // an answer, not an etcd error
	} else {
		i.observe("get", start, err)
	}
	return err
}

func (i *instrumented) GetList(ctx context.Context, key string, opts storage.ListOptions, list runtime.Object) error {
	start := time.Now()
	err := i.Interface.GetList(ctx, key, opts, list)
	i.observe("listWithCount", start, err)
	return err
}

func (i *instrumented) GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool, pre *storage.Preconditions, try storage.UpdateFunc, cached runtime.Object) error {
	start := time.Now()
	err := i.Interface.GuaranteedUpdate(ctx, key, dest, ignoreNotFound, pre, try, cached)
	i.observe("update", start, err)
	return err
}

func (i *instrumented) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	start := time.Now()
	w, err := i.Interface.Watch(ctx, key, opts)
	i.observe("watch", start, err)
	return w, err
}

// countObjects sets apiserver_resource_objects for every resource now and
// then every interval, until ctx ends.
func countObjects(ctx context.Context, m *metrics.Metrics, stores func() map[schema.GroupResource]storage.Interface, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for gr, st := range stores() {
			n := int64(-1)
			if stats, err := st.Stats(ctx); err == nil {
				n = stats.ObjectCount
			}
			if ctx.Err() != nil {
				return
			}
			m.SetObjectCount(gr.Group, gr.Resource, n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
