package builtin

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/kite-project/kite/apis/core/quota"
	"github.com/kite-project/kite/registry"
)

// PluginResourceQuota is upstream's name (k8s.io/apiserver's
// admission/plugin/resourcequota).
const PluginResourceQuota = "ResourceQuota"

// quotaFieldManager is the manager of the quota status admission
// writes, as kube-apiserver's loopback client is named.
const quotaFieldManager = "kube-apiserver"

// ResourceQuotaPlugin is upstream's ResourceQuota admission, a validating
// step: a namespaced write that changes what its object uses of a
// ResourceQuota of the namespace (quota.CheckRequest) is refused past the
// quota's status.hard, else charged to the quota's status.used before it
// is stored. The charge is written with optimistic concurrency on the
// quota's resourceVersion, and re-checked against the quota as stored
// when another write got there first, so concurrent creates never both
// pass a limit (upstream's evaluator does the same with 3 retries, Kite
// retries until the quota is stable or the context ends). Under dry-run
// nothing is charged. The resourcequota controller recomputes used from
// the objects, which also gives back what a request charged and then
// failed to store. stores returns the served Stores.
func ResourceQuotaPlugin(stores func(groupResource string) *registry.Store) registry.AdmissionPlugin {
	return registry.AdmissionPlugin{
		Name:    PluginResourceQuota,
		Handles: func(op admission.Operation) bool { return op == admission.Create || op == admission.Update },
		Validate: func(ctx context.Context, a admission.Attributes) error {
			if a.GetNamespace() == "" || (a.GetOperation() == admission.Create && a.GetKind().GroupKind() == v1.SchemeGroupVersion.WithKind("Namespace").GroupKind()) {
				return nil
			}
			gr := a.GetResource().GroupResource()
			if quota.Ignored(gr) {
				return nil
			}
			ev := quota.For(gr)
			req := quota.Request{Create: a.GetOperation() == admission.Create, Subresource: a.GetSubresource(), Namespace: a.GetNamespace(), Object: a.GetObject(), Old: a.GetOldObject()}
			if !ev.Handles(req.Create, req.Subresource, req.Object, req.Old) {
				return nil
			}
			store := stores("resourcequotas")
			if store == nil {
				return nil
			}
			if err := chargeQuotas(ctx, store, ev, req, a.IsDryRun()); err != nil {
				return admission.NewForbidden(a, err)
			}
			return nil
		},
	}
}

// chargeQuotas checks req against the namespace's quotas and, unless
// dryRun, writes each changed quota's status.used.
func chargeQuotas(ctx context.Context, store *registry.Store, ev *quota.Evaluator, req quota.Request, dryRun bool) error {
	obj, err := cachedList(ctx, store, req.Namespace)
	if err != nil {
		return fmt.Errorf("listing resource quotas of %s: %w", req.Namespace, err)
	}
	quotas := obj.(*v1.ResourceQuotaList).Items
	if len(quotas) == 0 {
		return nil
	}
	charged, err := quota.CheckRequest(quotas, ev, req, time.Now())
	if err != nil || dryRun {
		return err
	}
	for i := range charged {
		if quota.Equals(quotas[i].Status.Used, charged[i].Status.Used) {
			continue
		}
		if err := chargeQuota(ctx, store, ev, req, &quotas[i]); err != nil {
			return err
		}
	}
	return nil
}

// chargeQuota writes one quota's charge: the update re-checks the
// request against the quota as stored, every time the write loses a race.
func chargeQuota(ctx context.Context, store *registry.Store, ev *quota.Evaluator, req quota.Request, q *v1.ResourceQuota) error {
	// refused is the quota's refusal, kept apart from the Store's errors
	// (which it would make an internal error).
	var refused error
	_, _, err := store.Update(ctx, &registry.UpdateRequest{
		Namespace:   q.Namespace,
		Name:        q.Name,
		Subresource: "status",
		Admitted:    true,
		Options:     metav1.UpdateOptions{FieldManager: quotaFieldManager},
		Object: func(_ context.Context, existing runtime.Object) (runtime.Object, error) {
			current := existing.(*v1.ResourceQuota)
			// The object's own copy: CheckRequest may set its namespace.
			r := req
			charged, err := quota.CheckRequest([]v1.ResourceQuota{*current}, ev, r, time.Now())
			if refused = err; err != nil {
				return nil, err
			}
			out := charged[0]
			return &out, nil
		},
	})
	switch {
	case refused != nil:
		return refused
	case apierrors.IsNotFound(err):
		// Deleted since the list: it limits nothing any more.
		return nil
	}
	return err
}
