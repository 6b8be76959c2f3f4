package listwatch

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// ListerWatcher is what a Reflector lists and watches. The list result is
// a list object (meta.ListInterface) whose ResourceVersion the Reflector
// watches from.
type ListerWatcher interface {
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// Store is what a Reflector writes into. Replace is called after each
// (re-)list with every object and the list's resourceVersion. A Reflector
// calls these from one goroutine, in the order of the events; an error is
// logged and the Reflector goes on (the next list repairs the store).
type Store interface {
	Add(obj runtime.Object) error
	Update(obj runtime.Object) error
	Delete(obj runtime.Object) error
	Replace(objs []runtime.Object, resourceVersion string) error
}

// ResourceVersionUpdater is implemented by stores that want to learn the
// resourceVersion of bookmarks (and of progress notifications), so that
// they know how current they are even when no object changes. A Reflector
// calls it for each bookmark only: Add, Update and Delete carry their
// object's resourceVersion, and Replace the list's.
type ResourceVersionUpdater interface {
	UpdateResourceVersion(resourceVersion string)
}
