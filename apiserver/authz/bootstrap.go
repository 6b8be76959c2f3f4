package authz

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/apis/rbac/bootstrappolicy"
)

// EnsureBootstrapPolicy reconciles the default policy through cs, as
// upstream's rbac/bootstrap-roles PostStartHook does: missing roles and
// bindings are created, missing rules, aggregation selectors and subjects
// added (never removed), and an object annotated
// rbac.authorization.kubernetes.io/autoupdate: "false" left alone. It
// tries every object and returns the errors of those that failed.
func EnsureBootstrapPolicy(ctx context.Context, cs kubernetes.Interface, p *bootstrappolicy.Policy) error {
	log := klog.FromContext(ctx)
	rbac := cs.RbacV1()
	var errs []error
	note := func(kind, name string, op reconciliation.ReconcileOperation, protected bool, err error) {
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("reconcile %s %s: %w", kind, name, err))
		case protected && op != reconciliation.ReconcileNone:
			log.Info("Bootstrap policy object not updated: autoupdate is off", "kind", kind, "name", name)
		case op != reconciliation.ReconcileNone:
			log.V(2).Info("Bootstrap policy object reconciled", "kind", kind, "name", name, "operation", op)
		}
	}
	for i := range p.ClusterRoles {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r := p.ClusterRoles[i].DeepCopy()
		res, err := (&reconciliation.ReconcileRoleOptions{
			Role:    reconciliation.ClusterRoleRuleOwner{ClusterRole: r},
			Client:  reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()},
			Confirm: true,
		}).Run()
		op, protected := resultOf(res)
		note("ClusterRole", r.Name, op, protected, err)
	}
	for i := range p.ClusterRoleBindings {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b := p.ClusterRoleBindings[i].DeepCopy()
		res, err := (&reconciliation.ReconcileRoleBindingOptions{
			RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b},
			Client:      reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()},
			Confirm:     true,
		}).Run()
		var op reconciliation.ReconcileOperation
		var protected bool
		if res != nil {
			op, protected = res.Operation, res.Protected
		}
		note("ClusterRoleBinding", b.Name, op, protected, err)
	}
	for i := range p.Roles {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r := p.Roles[i].DeepCopy()
		res, err := (&reconciliation.ReconcileRoleOptions{
			Role:    reconciliation.RoleRuleOwner{Role: r},
			Client:  reconciliation.RoleModifier{Client: rbac, NamespaceClient: cs.CoreV1().Namespaces()},
			Confirm: true,
		}).Run()
		op, protected := resultOf(res)
		note("Role", r.Namespace+"/"+r.Name, op, protected, err)
	}
	for i := range p.RoleBindings {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b := p.RoleBindings[i].DeepCopy()
		res, err := (&reconciliation.ReconcileRoleBindingOptions{
			RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: b},
			Client:      reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: cs.CoreV1().Namespaces()},
			Confirm:     true,
		}).Run()
		var op reconciliation.ReconcileOperation
		var protected bool
		if res != nil {
			op, protected = res.Operation, res.Protected
		}
		note("RoleBinding", b.Namespace+"/"+b.Name, op, protected, err)
	}
	return errors.Join(errs...)
}

func resultOf(res *reconciliation.ReconcileClusterRoleResult) (reconciliation.ReconcileOperation, bool) {
	if res == nil {
		return reconciliation.ReconcileNone, false
	}
	return res.Operation, res.Protected
}
