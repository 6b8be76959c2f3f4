package resourceset

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/apiserver/metrics"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/apiextensions"
	"github.com/kite-project/kite/registry/builtin"
)

// Scheme knows every built-in kind the set serves, plus the meta kinds.
func (r *Set) Scheme() *runtime.Scheme { return r.build.scheme }

// EnsureNamespaces creates the namespaces that exist from the start,
// those missing (createMissing).
func (r *Set) EnsureNamespaces(ctx context.Context) error {
	ns := r.Store("namespaces")
	objs := make([]runtime.Object, len(builtin.ImmortalNamespaces))
	for i, name := range builtin.ImmortalNamespaces {
		objs[i] = ns.Strategy().New()
		objs[i].(metav1.Object).SetName(name)
	}
	return createMissing(ctx, ns, objs)
}

// ReadinessCheck fails until every watch cache has filled: /readyz's
// "storage" check.
func (r *Set) ReadinessCheck(*http.Request) error {
	for _, st := range r.Stores() {
		if st.Storage() == nil {
			continue // a virtual resource
		}
		if err := st.Storage().ReadinessCheck(); err != nil {
			return fmt.Errorf("%s: %w", st.Strategy().GroupResource(), err)
		}
	}
	return nil
}

// WaitReady returns once every watch cache has filled (what /readyz
// checks), so that the first requests of a caller are served from memory;
// 0 means a timeout of 60 s.
func (r *Set) WaitReady(ctx context.Context, timeout time.Duration) error {
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		err := r.ReadinessCheck(nil)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storage not ready after %s: %w", timeout, err)
		case <-t.C:
		}
	}
}

// CountObjects sets apiserver_resource_objects for every resource now and
// then every interval, until ctx ends.
func (r *Set) CountObjects(ctx context.Context, m *metrics.Metrics, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for gr, st := range r.EtcdStores() {
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

// EnsureStartupObjects creates the objects kube-apiserver keeps from its
// start (builtin.StartupObjects: the system priority classes, API priority
// and fairness' configuration, the local APIServices) where they are
// missing (createMissing), the resources at once.
func (r *Set) EnsureStartupObjects(ctx context.Context) error {
	objs := builtin.StartupObjects(apiextensions.Strategy(time.Now))
	byResource := map[string][]runtime.Object{}
	var resources []string
	for _, o := range objs {
		gr := o.Resource.String()
		if r.Store(gr) == nil {
			continue // not served (an embedder's choice)
		}
		if _, ok := byResource[gr]; !ok {
			resources = append(resources, gr)
		}
		byResource[gr] = append(byResource[gr], o.Object)
	}
	errs := make([]error, len(resources))
	var wg sync.WaitGroup
	for i, gr := range resources {
		wg.Go(func() { errs[i] = createMissing(ctx, r.Store(gr), byResource[gr]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createMissing creates those of the cluster-scoped objs that st does not
// hold, all at once, as the field manager "kite". What exists is read
// with one list at resourceVersion 0 (the watch cache once filled, else
// etcd): on every start but the first nothing is missing and nothing is
// written, where a create per object would each be prepared (defaults,
// admission, managed fields) only to be refused by etcd. An object
// created meanwhile by someone else is left as it is.
func createMissing(ctx context.Context, st *registry.Store, objs []runtime.Object) error {
	gr := st.Strategy().GroupResource()
	list, err := st.List(ctx, "", &metainternalversion.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return fmt.Errorf("list %s: %w", gr, err)
	}
	existing := map[string]bool{}
	if err := meta.EachListItem(list, func(o runtime.Object) error {
		existing[o.(metav1.Object).GetName()] = true
		return nil
	}); err != nil {
		return fmt.Errorf("list %s: %w", gr, err)
	}
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	for i, obj := range objs {
		name := obj.(metav1.Object).GetName()
		if existing[name] {
			continue
		}
		wg.Go(func() {
			_, err := st.Create(ctx, "", obj, &metav1.CreateOptions{FieldManager: "kite"})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				errs[i] = fmt.Errorf("create %s %s: %w", gr, name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
