package resourceset

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/apiserver/metrics"
	"github.com/kite-project/kite/registry/apiextensions"
	"github.com/kite-project/kite/registry/builtin"
)

// Scheme knows every built-in kind the set serves, plus the meta kinds.
func (r *Set) Scheme() *runtime.Scheme { return r.build.scheme }

// EnsureNamespaces creates the namespaces that exist from the start.
func (r *Set) EnsureNamespaces(ctx context.Context) error {
	ns := r.Store("namespaces")
	for _, name := range builtin.ImmortalNamespaces {
		obj := ns.Strategy().New()
		obj.(metav1.Object).SetName(name)
		_, err := ns.Create(ctx, "", obj, &metav1.CreateOptions{FieldManager: "kite"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	return nil
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
// and fairness' configuration) where they are missing, all at once so
// that a start waits for one round trip to etcd rather than one per
// object. An object already there is left as it is.
func (r *Set) EnsureStartupObjects(ctx context.Context) error {
	objs := builtin.StartupObjects(apiextensions.Strategy(time.Now))
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	for i, o := range objs {
		st := r.Store(o.Resource.String())
		if st == nil {
			continue // not served (an embedder's choice)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.Create(ctx, "", o.Object, &metav1.CreateOptions{FieldManager: "kite"})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				name := o.Object.(metav1.Object).GetName()
				errs[i] = fmt.Errorf("create %s %s: %w", o.Resource, name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
