// Package namespacedeleter empties and removes terminating namespaces: the
// job of kube-controller-manager's namespace controller, run in-process so
// that "kubectl delete namespace" finishes without a controller manager.
//
// Deleting a namespace only marks it Terminating (registry/builtin). The
// Deleter then deletes every object in it, resource by resource, waits
// until nothing is left (pods bound to a node leave only once their node
// has stopped them), removes the "kubernetes" finalizer through the
// namespace's finalize subresource, and deletes the namespace for good.
package namespacedeleter

import (
	"context"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/registry"
)

// Options configure a Deleter.
type Options struct {
	// Namespaces is the namespaces' Store. Required.
	Namespaces *registry.Store
	// Contents returns the Stores of every namespaced resource served now
	// (custom resources come and go).
	Contents func() []*registry.Store
	// Retry is how soon a namespace that still has content is looked at
	// again; 0 means one second.
	Retry time.Duration
}

// Deleter removes terminating namespaces. Run drives it.
type Deleter struct {
	namespaces *registry.Store
	contents   func() []*registry.Store
	retry      time.Duration
}

// New returns a Deleter.
func New(opts Options) *Deleter {
	d := &Deleter{namespaces: opts.Namespaces, contents: opts.Contents, retry: opts.Retry}
	if d.retry == 0 {
		d.retry = time.Second
	}
	return d
}

// Run works until ctx ends: it looks at every terminating namespace, then
// waits for a change of any namespace (a watch from the list it looked
// at, so no change is missed) or, while some namespace still has
// content, for the retry period.
func (d *Deleter) Run(ctx context.Context) {
	for ctx.Err() == nil {
		pending, rv, err := d.sync(ctx)
		if err != nil && ctx.Err() == nil {
			klog.V(2).InfoS("Namespace deletion pass failed", "err", err)
			pending = true
		}
		wait := 5 * time.Minute
		if pending {
			wait = d.retry
		}
		d.waitForChange(ctx, rv, wait)
	}
}

// sync does one pass over the terminating namespaces. It reports whether
// any is left and the resourceVersion of the namespace list it read.
func (d *Deleter) sync(ctx context.Context) (pending bool, rv string, err error) {
	list, err := d.namespaces.List(ctx, "", &metainternalversion.ListOptions{})
	if err != nil {
		return false, "", err
	}
	nsList := list.(*v1.NamespaceList)
	for i := range nsList.Items {
		ns := &nsList.Items[i]
		if ns.DeletionTimestamp == nil {
			continue
		}
		done, err := d.delete(ctx, ns)
		if err != nil {
			return true, nsList.ResourceVersion, err
		}
		pending = pending || !done
	}
	return pending, nsList.ResourceVersion, nil
}

// delete empties ns and removes it once empty; it reports whether ns is
// gone (or only waits on finalizers of others).
func (d *Deleter) delete(ctx context.Context, ns *v1.Namespace) (bool, error) {
	remaining := 0
	for _, st := range d.contents() {
		if _, err := st.DeleteCollection(ctx, ns.Name, &metainternalversion.ListOptions{}, &metav1.DeleteOptions{}); err != nil {
			return false, err
		}
		left, err := st.List(ctx, ns.Name, &metainternalversion.ListOptions{})
		if err != nil {
			return false, err
		}
		remaining += meta.LenList(left)
	}
	if remaining > 0 {
		return false, nil
	}
	if slices.Contains(ns.Spec.Finalizers, v1.FinalizerKubernetes) {
		_, _, err := d.namespaces.Update(ctx, &registry.UpdateRequest{
			Name:        ns.Name,
			Subresource: "finalize",
			Options:     metav1.UpdateOptions{FieldManager: "namespace-controller"},
			Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
				cur := existing.(*v1.Namespace)
				cur.Spec.Finalizers = slices.DeleteFunc(cur.Spec.Finalizers, func(f v1.FinalizerName) bool { return f == v1.FinalizerKubernetes })
				return cur, nil
			},
		})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
	uid := ns.UID
	_, _, err := d.namespaces.Delete(ctx, "", ns.Name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		// Other spec or metadata finalizers remain: their owners remove
		// them and the namespace goes then.
		return true, nil
	}
	return false, err
}

// waitForChange returns after the first namespace event after rv, after
// wait, or when ctx ends.
func (d *Deleter) waitForChange(ctx context.Context, rv string, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if rv == "" {
		<-ctx.Done()
		return
	}
	no := false
	w, err := d.namespaces.Watch(ctx, "", &metainternalversion.ListOptions{ResourceVersion: rv, SendInitialEvents: &no})
	if err != nil {
		// Look again soon rather than sleep through changes.
		t := time.NewTimer(d.retry)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		return
	}
	defer w.Stop()
	select {
	case <-ctx.Done():
	case <-w.ResultChan():
	}
}
