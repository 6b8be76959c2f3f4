package etcd

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// RequestObserver is told of every call to etcd (the API server's metrics:
// etcd_request_duration_seconds and friends). An interface, so that the
// storage layer does not import the HTTP layer that serves the metrics.
type RequestObserver interface {
	EtcdRequest(operation, group, resource string, start time.Time, err error)
}

// Instrument times every call to st, the etcd store of gr, telling o under
// upstream's operation names. It goes directly on the etcd store, below the
// watch cache, so that it counts what reaches etcd.
func Instrument(st storage.Interface, gr schema.GroupResource, o RequestObserver) storage.Interface {
	return &instrumented{Interface: st, m: o, gr: gr}
}

// instrumented is Instrument's store.
type instrumented struct {
	storage.Interface
	m  RequestObserver
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
