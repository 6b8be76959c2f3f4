package authz

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
	return EnsureBootstrapPolicyWith(ctx, ClientModifiers(cs), p)
}

// Modifiers are where the reconciler reads and writes each kind of the
// policy: a client's requests (ClientModifiers), or the server's own
// registry in process (the start's, docs/startup.md).
type Modifiers struct {
	ClusterRoles, Roles               reconciliation.RuleOwnerModifier
	ClusterRoleBindings, RoleBindings reconciliation.RoleBindingModifier
}

// ClientModifiers are Modifiers making requests through cs, as upstream's
// hook does through its loopback client.
func ClientModifiers(cs kubernetes.Interface) Modifiers {
	rbac, namespaces := cs.RbacV1(), cs.CoreV1().Namespaces()
	return Modifiers{
		ClusterRoles:        reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()},
		ClusterRoleBindings: reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()},
		Roles:               reconciliation.RoleModifier{Client: rbac, NamespaceClient: namespaces},
		RoleBindings:        reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: namespaces},
	}
}

// EnsureBootstrapPolicyWith is EnsureBootstrapPolicy reading and writing
// with m.
func EnsureBootstrapPolicyWith(ctx context.Context, m Modifiers, p *bootstrappolicy.Policy) error {
	clusterRoles, clusterRoleBindings, roles, roleBindings := m.ClusterRoles, m.ClusterRoleBindings, m.Roles, m.RoleBindings
	var steps []reconcileStep
	for i := range p.ClusterRoles {
		r := p.ClusterRoles[i].DeepCopy()
		steps = append(steps, reconcileStep{"ClusterRole", r.Name, func() (reconciliation.ReconcileOperation, bool, error) {
			return ofRole((&reconciliation.ReconcileRoleOptions{Role: reconciliation.ClusterRoleRuleOwner{ClusterRole: r},
				Client: clusterRoles, Confirm: true}).Run())
		}})
	}
	for i := range p.ClusterRoleBindings {
		b := p.ClusterRoleBindings[i].DeepCopy()
		steps = append(steps, reconcileStep{"ClusterRoleBinding", b.Name, func() (reconciliation.ReconcileOperation, bool, error) {
			return ofBinding((&reconciliation.ReconcileRoleBindingOptions{RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b},
				Client: clusterRoleBindings, Confirm: true}).Run())
		}})
	}
	for i := range p.Roles {
		r := p.Roles[i].DeepCopy()
		steps = append(steps, reconcileStep{"Role", r.Namespace + "/" + r.Name, func() (reconciliation.ReconcileOperation, bool, error) {
			return ofRole((&reconciliation.ReconcileRoleOptions{Role: reconciliation.RoleRuleOwner{Role: r},
				Client: roles, Confirm: true}).Run())
		}})
	}
	for i := range p.RoleBindings {
		b := p.RoleBindings[i].DeepCopy()
		steps = append(steps, reconcileStep{"RoleBinding", b.Namespace + "/" + b.Name, func() (reconciliation.ReconcileOperation, bool, error) {
			return ofBinding((&reconciliation.ReconcileRoleBindingOptions{RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: b},
				Client: roleBindings, Confirm: true}).Run())
		}})
	}
	log := klog.FromContext(ctx)
	// The objects are independent of each other, so they are reconciled
	// bootstrapParallelism at a time rather than one after another: on a
	// fresh data directory each is a read and a create, and a server's
	// start waits for all of them (docs/startup.md). Upstream's hook runs
	// them in sequence; the result is the same set of objects.
	errs := make([]error, len(steps))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(bootstrapParallelism, len(steps)) {
		wg.Go(func() {
			for i := range next {
				errs[i] = steps[i].reconcile(log)
			}
		})
	}
	for i := range steps {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}

// bootstrapParallelism is how many objects of the bootstrap policy are
// reconciled at once: enough that etcd commits the creates of a fresh
// data directory in a few batches rather than one round trip after
// another (the start writes in process, no request is involved).
const bootstrapParallelism = 32

// reconcile runs the step and logs what it did.
func (s reconcileStep) reconcile(log klog.Logger) error {
	op, protected, err := s.run()
	switch {
	case err != nil:
		return fmt.Errorf("reconcile %s %s: %w", s.kind, s.name, err)
	case protected && op != reconciliation.ReconcileNone:
		log.Info("Bootstrap policy object not updated: autoupdate is off", "kind", s.kind, "name", s.name)
	case op != reconciliation.ReconcileNone:
		log.V(2).Info("Bootstrap policy object reconciled", "kind", s.kind, "name", s.name, "operation", op)
	}
	return nil
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
