package crd

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Terminating condition reasons, as upstream's CRD finalizer writes them.
const (
	reasonInProgress     = "InstanceDeletionInProgress"
	reasonFailed         = "InstanceDeletionFailed"
	reasonCompleted      = "InstanceDeletionCompleted"
	reasonNeverEstablish = "NeverEstablished"
)

// InstancesDeleted reports whether a deleted CRD's custom resources are
// all gone (Terminating=False/InstanceDeletionCompleted): from then on
// its resource is no longer served, and once it is not, the Controller
// removes the finalizer.
func InstancesDeleted(crd *apiextensionsv1.CustomResourceDefinition) bool {
	if crd.DeletionTimestamp == nil {
		return false
	}
	c := apihelpers.FindCRDCondition(crd, apiextensionsv1.Terminating)
	return c != nil && c.Status == apiextensionsv1.ConditionFalse && c.Reason == reasonCompleted
}

// errStillServed: the resource of a CRD whose instances are gone is still
// served; the API server stops serving it in a moment.
var errStillServed = errors.New("custom resources still served")

// finalize is upstream's CRD finalizer: Terminating=True/
// InstanceDeletionInProgress, the custom resources deleted (one
// DeleteCollection per namespace that has any) and, once none is left,
// Terminating=False/InstanceDeletionCompleted and the finalizer removed.
// Unlike upstream, which removes the finalizer in the same write, the
// finalizer goes only once the resource is no longer served, so that a
// client that finds the CRD gone finds its resource gone too.
func (c *Controller) finalize(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		crd = crd.DeepCopy()
		setTerminating(crd, apiextensionsv1.ConditionFalse, reasonNeverEstablish, "resource was never established")
		apihelpers.CRDRemoveFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer)
		_, err := c.writeStatus(ctx, crd)
		return err
	}
	gvr, ok := servedResource(crd)
	if !InstancesDeleted(crd) {
		if cond := apihelpers.FindCRDCondition(crd, apiextensionsv1.Terminating); cond == nil || cond.Status != apiextensionsv1.ConditionTrue || cond.Reason != reasonInProgress {
			next := crd.DeepCopy()
			setTerminating(next, apiextensionsv1.ConditionTrue, reasonInProgress, "CustomResource deletion is in progress")
			out, err := c.writeStatus(ctx, next)
			if out == nil || err != nil {
				return err
			}
			crd = out
		}
		var left int
		var err error
		switch {
		case ok:
			left, err = c.deleteInstances(ctx, gvr)
		case c.unserved != nil:
			left, err = c.unserved.DeleteUnserved(ctx, crd)
		}
		if err != nil {
			next := crd.DeepCopy()
			setTerminating(next, apiextensionsv1.ConditionTrue, reasonFailed, fmt.Sprintf("could not issue all deletes: %v", err))
			if _, werr := c.writeStatus(ctx, next); werr != nil {
				err = errors.Join(err, werr)
			}
			return err
		}
		if left > 0 {
			// Held by finalizers of their own: look again later.
			c.queue.AddAfter(crd.Name, c.retry)
			return nil
		}
		next := crd.DeepCopy()
		setTerminating(next, apiextensionsv1.ConditionFalse, reasonCompleted, "removed all instances")
		out, err := c.writeStatus(ctx, next)
		if out == nil || err != nil {
			return err
		}
		crd = out
	}
	if ok {
		if _, err := c.dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); !apierrors.IsNotFound(err) {
			if err == nil {
				err = errStillServed
			}
			return fmt.Errorf("CRD %s: %w", crd.Name, err)
		}
	}
	crd = crd.DeepCopy()
	apihelpers.CRDRemoveFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer)
	_, err := c.writeStatus(ctx, crd)
	return err
}

func setTerminating(crd *apiextensionsv1.CustomResourceDefinition, status apiextensionsv1.ConditionStatus, reason, message string) {
	apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: status, Reason: reason, Message: message,
	})
}

// servedResource is the resource the CRD's custom resources are read and
// deleted through: its storage version if served, else its first served
// version (with conversion None every served version reads the same
// objects). ok is false when no version is served.
func servedResource(crd *apiextensionsv1.CustomResourceDefinition) (gvr schema.GroupVersionResource, ok bool) {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	if version == "" {
		return gvr, false
	}
	return schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Status.AcceptedNames.Plural}, true
}

// deleteInstances deletes every custom resource of gvr, one
// DeleteCollection per namespace that has any, and returns how many are
// left (those whose own finalizers hold them).
func (c *Controller) deleteInstances(ctx context.Context, gvr schema.GroupVersionResource) (int, error) {
	r := c.dynamic.Resource(gvr)
	list, err := r.List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", gvr, err)
	}
	if len(list.Items) == 0 {
		return 0, nil
	}
	namespaces := sets.New[string]()
	for i := range list.Items {
		namespaces.Insert(list.Items[i].GetNamespace())
	}
	for _, ns := range sets.List(namespaces) {
		var err error
		if ns == "" {
			err = r.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		} else {
			err = r.Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		}
		if err != nil {
			return len(list.Items), fmt.Errorf("delete %s in namespace %q: %w", gvr, ns, err)
		}
	}
	left, err := r.List(ctx, metav1.ListOptions{})
	if err != nil {
		return len(list.Items), fmt.Errorf("list %s: %w", gvr, err)
	}
	return len(left.Items), nil
}
