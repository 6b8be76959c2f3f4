package apiextensions

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/registry"
)

// Installer serves and stops serving the custom resources of CRDs.
type Installer interface {
	// Install serves the resource of an Established CRD from now on, or
	// serves it anew when its spec or accepted names changed; it does
	// nothing when crd is served as it is.
	Install(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error
	// Terminate marks the CRD's resource as going away: creates are
	// refused from now on and discovery shows it read-and-delete only.
	Terminate(name string) error
	// Uninstall stops serving the resource of the CRD named name.
	Uninstall(name string) error
	// Instances returns the store of the CRD's custom resources (its
	// storage version), or nil when it is not served.
	Instances(name string) *registry.Store
}

// Options configure a Loop.
type Options struct {
	// CRDs is the CustomResourceDefinitions' Store. Required.
	CRDs *registry.Store
	// Installer serves what the loop establishes. Required.
	Installer Installer
	// Retry is how soon a pass that left work (instances still being
	// deleted, a failed write) runs again; 0 means one second.
	Retry time.Duration
}

// Loop names, establishes and cleans up CRDs: upstream's naming,
// establishing and CRD finalizer controllers in one level-driven loop.
// Run drives it.
type Loop struct {
	crds      *registry.Store
	installer Installer
	retry     time.Duration
}

// New returns a Loop.
func New(opts Options) *Loop {
	l := &Loop{crds: opts.CRDs, installer: opts.Installer, retry: opts.Retry}
	if l.retry == 0 {
		l.retry = time.Second
	}
	return l
}

// Run works until ctx ends: a pass over every CRD, then a wait for the
// next change of any (a watch from the list the pass read, so nothing is
// missed) or, while work is left, for the retry period.
func (l *Loop) Run(ctx context.Context) {
	for ctx.Err() == nil {
		pending, rv, err := l.Sync(ctx)
		if err != nil && ctx.Err() == nil {
			klog.V(2).InfoS("CRD pass failed", "err", err)
			pending = true
		}
		wait := 5 * time.Minute
		if pending {
			wait = l.retry
		}
		l.waitForChange(ctx, rv, wait)
	}
}

// Sync does one pass: it reports whether work is left and the
// resourceVersion of the CRD list it read.
func (l *Loop) Sync(ctx context.Context) (pending bool, rv string, err error) {
	obj, err := l.crds.List(ctx, "", &metainternalversion.ListOptions{})
	if err != nil {
		return false, "", err
	}
	list := obj.(*apiextensionsv1.CustomResourceDefinitionList)
	var errs []error
	for i := range list.Items {
		crd := &list.Items[i]
		more, err := l.sync(ctx, crd, list.Items)
		if err != nil {
			errs = append(errs, fmt.Errorf("CRD %s: %w", crd.Name, err))
		}
		pending = pending || more
	}
	if len(errs) > 0 {
		return true, list.ResourceVersion, errs[0]
	}
	return pending, list.ResourceVersion, nil
}

func (l *Loop) sync(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, all []apiextensionsv1.CustomResourceDefinition) (pending bool, err error) {
	if crd.DeletionTimestamp != nil {
		if !apihelpers.CRDHasFinalizer(crd, CleanupFinalizer) {
			return false, nil
		}
		return l.cleanup(ctx, crd)
	}
	if !apiequality.Semantic.DeepEqual(crd.Spec.Names, crd.Status.AcceptedNames) {
		names, accepted, established := acceptNames(crd, all)
		if !reflect.DeepEqual(crd.Status.AcceptedNames, names) || !apihelpers.IsCRDConditionEquivalent(&accepted, apihelpers.FindCRDCondition(crd, apiextensionsv1.NamesAccepted)) {
			crd, err = l.writeStatus(ctx, crd, func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Status.AcceptedNames = names
				apihelpers.SetCRDCondition(c, accepted)
				apihelpers.SetCRDCondition(c, established)
			})
			if err != nil {
				return true, err
			}
		}
	}
	if next := crd.DeepCopy(); establish(next) {
		if crd, err = l.writeStatus(ctx, crd, func(c *apiextensionsv1.CustomResourceDefinition) { establish(c) }); err != nil {
			return true, err
		}
	}
	if apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		if err := l.installer.Install(ctx, crd); err != nil {
			return true, err
		}
	}
	return false, nil
}

// cleanup is upstream's CRD finalizer: InstanceDeletionInProgress, one
// DeleteCollection per namespace, and once no instance is left
// InstanceDeletionCompleted, the resource unserved and the finalizer
// removed (which lets the CRD go).
func (l *Loop) cleanup(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (pending bool, err error) {
	if !apihelpers.IsCRDConditionPresentAndEqual(crd, apiextensionsv1.Terminating, apiextensionsv1.ConditionTrue) ||
		apihelpers.FindCRDCondition(crd, apiextensionsv1.Terminating).Reason != "InstanceDeletionInProgress" {
		crd, err = l.writeStatus(ctx, crd, func(c *apiextensionsv1.CustomResourceDefinition) {
			apihelpers.SetCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{
				Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
				Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress",
			})
		})
		if err != nil {
			return true, err
		}
	}
	if err := l.installer.Terminate(crd.Name); err != nil {
		return true, err
	}
	if store := l.installer.Instances(crd.Name); store != nil {
		left, err := deleteInstances(ctx, store)
		if err != nil {
			l.writeStatus(ctx, crd, func(c *apiextensionsv1.CustomResourceDefinition) {
				apihelpers.SetCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{
					Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
					Reason: "InstanceDeletionFailed", Message: fmt.Sprintf("could not issue all deletes: %v", err),
				})
			})
			return true, err
		}
		if left > 0 {
			return true, nil
		}
	}
	crd, err = l.writeStatus(ctx, crd, func(c *apiextensionsv1.CustomResourceDefinition) {
		apihelpers.SetCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionFalse,
			Reason: "InstanceDeletionCompleted", Message: "removed all instances",
		})
	})
	if err != nil {
		return true, err
	}
	if err := l.installer.Uninstall(crd.Name); err != nil {
		return true, err
	}
	_, _, err = l.crds.Update(ctx, &registry.UpdateRequest{
		Name:    crd.Name,
		Options: metav1.UpdateOptions{FieldManager: "kite-crd-finalizer"},
		Object: func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			c := cur.(*apiextensionsv1.CustomResourceDefinition)
			apihelpers.CRDRemoveFinalizer(c, CleanupFinalizer)
			return c, nil
		},
	})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	return err != nil, err
}

// deleteInstances deletes every custom resource, one DeleteCollection per
// namespace that has any, and returns how many were there.
func deleteInstances(ctx context.Context, store *registry.Store) (int, error) {
	obj, err := store.List(ctx, "", &metainternalversion.ListOptions{})
	if err != nil {
		return 0, err
	}
	namespaces := sets.New[string]()
	n := 0
	err = meta.EachListItem(obj, func(item runtime.Object) error {
		m, err := meta.Accessor(item)
		if err != nil {
			return err
		}
		namespaces.Insert(m.GetNamespace())
		n++
		return nil
	})
	if err != nil {
		return 0, err
	}
	for ns := range namespaces {
		if _, err := store.DeleteCollection(ctx, ns, &metainternalversion.ListOptions{}, &metav1.DeleteOptions{}); err != nil {
			return n, fmt.Errorf("delete instances in namespace %q: %w", ns, err)
		}
	}
	return n, nil
}

// writeStatus changes the CRD's status through its status subresource,
// re-applying change to the current object on conflicts.
func (l *Loop) writeStatus(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, change func(*apiextensionsv1.CustomResourceDefinition)) (*apiextensionsv1.CustomResourceDefinition, error) {
	out, _, err := l.crds.Update(ctx, &registry.UpdateRequest{
		Name:        crd.Name,
		Subresource: "status",
		Options:     metav1.UpdateOptions{FieldManager: "kite-crd-controller"},
		Object: func(_ context.Context, cur runtime.Object) (runtime.Object, error) {
			c := cur.(*apiextensionsv1.CustomResourceDefinition)
			change(c)
			return c, nil
		},
	})
	if err != nil {
		return crd, fmt.Errorf("write status: %w", err)
	}
	return out.(*apiextensionsv1.CustomResourceDefinition), nil
}

// waitForChange returns at the first change of any CRD after rv, after
// wait, or when ctx ends.
func (l *Loop) waitForChange(ctx context.Context, rv string, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if rv == "" {
		<-ctx.Done()
		return
	}
	w, err := l.crds.Watch(ctx, "", &metainternalversion.ListOptions{ResourceVersion: rv})
	if err != nil {
		<-ctx.Done()
		return
	}
	defer w.Stop()
	select {
	case <-w.ResultChan():
	case <-ctx.Done():
	}
}
