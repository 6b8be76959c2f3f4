package authz

import (
	"context"
	"errors"
	"fmt"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	return EnsureBootstrapPolicyReading(ctx, cs, p, nil)
}

// ReadRBAC reads the current object of an RBAC resource ("clusterroles",
// "clusterrolebindings", "roles", "rolebindings") without a request, e.g.
// from the server's watch cache; a missing one is a NotFound error.
type ReadRBAC func(resource, namespace, name string) (runtime.Object, error)

// EnsureBootstrapPolicyReading is EnsureBootstrapPolicy reading the
// current objects with read (when not nil) instead of a GET each: the
// server's own start reads its synced cache, and only the objects that
// are missing or out of date cost a request (docs/startup.md).
func EnsureBootstrapPolicyReading(ctx context.Context, cs kubernetes.Interface, p *bootstrappolicy.Policy, read ReadRBAC) error {
	rbac, namespaces := cs.RbacV1(), cs.CoreV1().Namespaces()
	var clusterRoles reconciliation.RuleOwnerModifier = reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()}
	var clusterRoleBindings reconciliation.RoleBindingModifier = reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()}
	var roles reconciliation.RuleOwnerModifier = reconciliation.RoleModifier{Client: rbac, NamespaceClient: namespaces}
	var roleBindings reconciliation.RoleBindingModifier = reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: namespaces}
	if read != nil {
		clusterRoles = readingRoles{clusterRoles, func(ns, name string) (reconciliation.RuleOwner, error) {
			o, err := readAs[*rbacv1.ClusterRole](read, "clusterroles", ns, name)
			return reconciliation.ClusterRoleRuleOwner{ClusterRole: o}, err
		}}
		roles = readingRoles{roles, func(ns, name string) (reconciliation.RuleOwner, error) {
			o, err := readAs[*rbacv1.Role](read, "roles", ns, name)
			return reconciliation.RoleRuleOwner{Role: o}, err
		}}
		clusterRoleBindings = readingBindings{clusterRoleBindings, func(ns, name string) (reconciliation.RoleBinding, error) {
			o, err := readAs[*rbacv1.ClusterRoleBinding](read, "clusterrolebindings", ns, name)
			return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: o}, err
		}}
		roleBindings = readingBindings{roleBindings, func(ns, name string) (reconciliation.RoleBinding, error) {
			o, err := readAs[*rbacv1.RoleBinding](read, "rolebindings", ns, name)
			return reconciliation.RoleBindingAdapter{RoleBinding: o}, err
		}}
	}
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
// reconciled at once.
const bootstrapParallelism = 8

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

// readingRoles reads roles with get and writes them with the modifier.
type readingRoles struct {
	reconciliation.RuleOwnerModifier
	get func(namespace, name string) (reconciliation.RuleOwner, error)
}

func (m readingRoles) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	return m.get(namespace, name)
}

// readingBindings reads bindings with get and writes them with the
// modifier.
type readingBindings struct {
	reconciliation.RoleBindingModifier
	get func(namespace, name string) (reconciliation.RoleBinding, error)
}

func (m readingBindings) Get(namespace, name string) (reconciliation.RoleBinding, error) {
	return m.get(namespace, name)
}

// readAs reads one object with read, a copy (the reconciler changes
// what it gets), as T.
func readAs[T interface {
	runtime.Object
	*R
}, R any](read ReadRBAC, resource, namespace, name string) (T, error) {
	o, err := read(resource, namespace, name)
	if err != nil {
		return nil, err
	}
	t, ok := o.DeepCopyObject().(T)
	if !ok {
		return nil, fmt.Errorf("read %s %s/%s: got %T", resource, namespace, name, o)
	}
	return t, nil
}
