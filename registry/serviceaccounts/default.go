// Package serviceaccounts gives every namespace its "default" service
// account, as kube-controller-manager's service account controller does:
// pods name it when they name none, and users expect to see it.
package serviceaccounts

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/registry"
)

// DefaultName is the service account every namespace gets.
const DefaultName = "default"

// Options configure a Controller.
type Options struct {
	// Namespaces and ServiceAccounts are the two Stores. Required.
	Namespaces, ServiceAccounts *registry.Store
	// Retry is the pause after a failed pass; 0 means one second.
	Retry time.Duration
}

// Controller creates missing default service accounts. Run drives it.
type Controller struct {
	namespaces, accounts *registry.Store
	retry                time.Duration
}

// New returns a Controller.
func New(opts Options) *Controller {
	c := &Controller{namespaces: opts.Namespaces, accounts: opts.ServiceAccounts, retry: opts.Retry}
	if c.retry == 0 {
		c.retry = time.Second
	}
	return c
}

// Run works until ctx ends: it looks at every namespace, then follows
// namespace events from that list (a recreated default account is
// noticed on the namespace's next change or the next pass).
func (c *Controller) Run(ctx context.Context) {
	for ctx.Err() == nil {
		rv, err := c.syncAll(ctx)
		if err == nil {
			err = c.follow(ctx, rv)
		}
		if err != nil && ctx.Err() == nil {
			klog.V(2).InfoS("Default service account pass failed", "err", err)
			t := time.NewTimer(c.retry)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
}

func (c *Controller) syncAll(ctx context.Context) (string, error) {
	list, err := c.namespaces.List(ctx, "", &metainternalversion.ListOptions{})
	if err != nil {
		return "", err
	}
	nsList := list.(*v1.NamespaceList)
	for i := range nsList.Items {
		if err := c.ensure(ctx, &nsList.Items[i]); err != nil {
			return "", err
		}
	}
	return nsList.ResourceVersion, nil
}

// follow handles namespace events after rv until the watch ends (at most
// five minutes, then a new pass lists again).
func (c *Controller) follow(ctx context.Context, rv string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	no := false
	w, err := c.namespaces.Watch(ctx, "", &metainternalversion.ListOptions{ResourceVersion: rv, SendInitialEvents: &no})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			obj := ev.Object
			if co, ok := obj.(runtime.CacheableObject); ok {
				// The watch cache's events carry shared objects.
				obj = co.GetObject()
			}
			if ns, ok := obj.(*v1.Namespace); ok {
				if err := c.ensure(ctx, ns); err != nil {
					return err
				}
			}
		}
	}
}

// ensure creates the default account of an active namespace.
func (c *Controller) ensure(ctx context.Context, ns *v1.Namespace) error {
	if ns.DeletionTimestamp != nil || ns.Status.Phase == v1.NamespaceTerminating {
		return nil
	}
	if _, err := c.accounts.Get(ctx, ns.Name, DefaultName, &metav1.GetOptions{ResourceVersion: "0"}); err == nil {
		return nil
	}
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: ns.Name}}
	_, err := c.accounts.Create(ctx, ns.Name, sa, &metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return nil // the namespace went or is going
	}
	return err
}
