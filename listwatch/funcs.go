package listwatch

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// ListWatchFuncs adapts two functions to a ListerWatcher.
type ListWatchFuncs struct {
	ListFunc  func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	WatchFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

var _ ListerWatcher = ListWatchFuncs{}

var errNoFunc = errors.New("listwatch: function not set")

// List calls ListFunc.
func (f ListWatchFuncs) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if f.ListFunc == nil {
		return nil, errNoFunc
	}
	return f.ListFunc(ctx, opts)
}

// Watch calls WatchFunc.
func (f ListWatchFuncs) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if f.WatchFunc == nil {
		return nil, errNoFunc
	}
	return f.WatchFunc(ctx, opts)
}

// TypedClient is the list and watch half of a client-go typed client for
// one resource, e.g. clientset.CoreV1().Pods(namespace), whose List returns
// the typed list L (*v1.PodList).
type TypedClient[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// FromTypedClient returns a ListerWatcher over a typed client. tweak, when
// not nil, edits the options of every list and watch (e.g. to set a field
// or label selector).
func FromTypedClient[L runtime.Object](c TypedClient[L], tweak func(*metav1.ListOptions)) ListerWatcher {
	return WithOptions(ListWatchFuncs{
		ListFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, opts)
		},
		WatchFunc: c.Watch,
	}, tweak)
}

// WithOptions returns lw with tweak editing the options of every list and
// watch first; a nil tweak returns lw.
func WithOptions(lw ListerWatcher, tweak func(*metav1.ListOptions)) ListerWatcher {
	if tweak == nil {
		return lw
	}
	return ListWatchFuncs{
		ListFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			tweak(&opts)
			return lw.List(ctx, opts)
		},
		WatchFunc: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			tweak(&opts)
			return lw.Watch(ctx, opts)
		},
	}
}

// FromRESTClient returns a ListerWatcher for resource in namespace (""
// for all namespaces) through a REST client such as
// clientset.CoreV1().RESTClient(), with fieldSelector on every list and
// watch. The node agent watches its pods with
// FromRESTClient(c, "pods", "", fields.OneTermEqualSelector("spec.nodeName", node)).
func FromRESTClient(c rest.Interface, resource, namespace string, fieldSelector fields.Selector) ListerWatcher {
	if fieldSelector == nil {
		fieldSelector = fields.Everything()
	}
	selector := fieldSelector.String()
	return ListWatchFuncs{
		ListFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			return c.Get().
				Namespace(namespace).
				Resource(resource).
				VersionedParams(&opts, metav1.ParameterCodec).
				Do(ctx).
				Get()
		},
		WatchFunc: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			opts.Watch = true
			return c.Get().
				Namespace(namespace).
				Resource(resource).
				VersionedParams(&opts, metav1.ParameterCodec).
				Watch(ctx)
		},
	}
}
