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
	rbac, namespaces := cs.RbacV1(), cs.CoreV1().Namespaces()
	var steps []reconcileStep
	for i := range p.ClusterRoles {
		r := p.ClusterRoles[i].DeepCopy()
		steps = append(steps, reconcileStep{"ClusterRole", r.Name, func() (reconciliation.ReconcileOperation, bool, error) {
			return ofRole((&reconciliation.ReconcileRoleOptions{Role: reconciliation.ClusterRoleRuleOwner{ClusterRole: r},
				Client: reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()}, Confirm: true}).Run())
		}})
	}
	for i := range p.ClusterRoleBindings {
		b := p.ClusterRoleBindings[i].DeepCopy()
		steps = append(steps, reconcileStep{"ClusterRoleBinding", b.Name, func() (reconciliation.ReconcileOperation, bool, error) {
			return ofBinding((&reconciliation.ReconcileRoleBindingOptions{RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b},
				Client: reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()}, Confirm: true}).Run())
		}})
	}
	for i := range p.Roles {
		r := p.Roles[i].DeepCopy()
		steps = append(steps, reconcileStep{"Role", r.Namespace + "/" + r.Name, func() (reconciliation.ReconcileOperation, bool, error) {
			return ofRole((&reconciliation.ReconcileRoleOptions{Role: reconciliation.RoleRuleOwner{Role: r},
				Client: reconciliation.RoleModifier{Client: rbac, NamespaceClient: namespaces}, Confirm: true}).Run())
		}})
	}
	for i := range p.RoleBindings {
		b := p.RoleBindings[i].DeepCopy()
		steps = append(steps, reconcileStep{"RoleBinding", b.Namespace + "/" + b.Name, func() (reconciliation.ReconcileOperation, bool, error) {
			return ofBinding((&reconciliation.ReconcileRoleBindingOptions{RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: b},
				Client: reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: namespaces}, Confirm: true}).Run())
		}})
	}
	log := klog.FromContext(ctx)
	var errs []error
	for _, s := range steps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		op, protected, err := s.run()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("reconcile %s %s: %w", s.kind, s.name, err))
		case protected && op != reconciliation.ReconcileNone:
			log.Info("Bootstrap policy object not updated: autoupdate is off", "kind", s.kind, "name", s.name)
		case op != reconciliation.ReconcileNone:
			log.V(2).Info("Bootstrap policy object reconciled", "kind", s.kind, "name", s.name, "operation", op)
		}
	}
	return errors.Join(errs...)
}

// reconcileStep reconciles one object of the policy.
type reconcileStep struct {
	kind, name string
	run        func() (op reconciliation.ReconcileOperation, protected bool, err error)
}

func ofRole(res *reconciliation.ReconcileClusterRoleResult, err error) (reconciliation.ReconcileOperation, bool, error) {
	if res == nil {
		return reconciliation.ReconcileNone, false, err
	}
	return res.Operation, res.Protected, err
}

func ofBinding(res *reconciliation.ReconcileClusterRoleBindingResult, err error) (reconciliation.ReconcileOperation, bool, error) {
	if res == nil {
		return reconciliation.ReconcileNone, false, err
	}
	return res.Operation, res.Protected, err
}
