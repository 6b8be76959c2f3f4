package kite

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-helpers/auth/rbac/reconciliation"

	"github.com/kite-project/kite/apiserver/authz"
	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/resourceset"
)

// loopbackFieldManager is the field manager of the start's own writes of
// the bootstrap RBAC policy: upstream's hook writes through its loopback
// client, whose user agent ("kube-apiserver/v1.37...") names the manager.
const loopbackFieldManager = "kube-apiserver"

// registryModifiers are the bootstrap policy reconciler's Modifiers over
// the registry's stores, in process: the current objects are read from
// the synced watch caches (resourceVersion 0) and written with the
// stores' Create, Update and Delete (defaulting, admission, validation,
// managed fields, the RBAC escalation checks), as a request would be,
// without TLS, HTTP, serialization, authentication, authorization or
// priority and fairness. ctx must carry the caller's user
// (withLoopbackUser). The returned versions record, per resource, the
// resourceVersion of the last write, for the authorizer to catch up to.
func registryModifiers(ctx context.Context, rs *resourceset.Set) (authz.Modifiers, *writtenVersions) {
	written := &writtenVersions{max: map[string]uint64{}}
	rw := func(resource string) storeRW {
		return storeRW{ctx: ctx, resource: resource, store: rs.Store(resource + ".rbac.authorization.k8s.io"), namespaces: rs.Store("namespaces"), written: written}
	}
	return authz.Modifiers{
		ClusterRoles: roleRW[*rbacv1.ClusterRole]{rw("clusterroles"), func(r *rbacv1.ClusterRole) reconciliation.RuleOwner {
			return reconciliation.ClusterRoleRuleOwner{ClusterRole: r}
		}},
		Roles: roleRW[*rbacv1.Role]{rw("roles"), func(r *rbacv1.Role) reconciliation.RuleOwner { return reconciliation.RoleRuleOwner{Role: r} }},
		ClusterRoleBindings: bindingRW[*rbacv1.ClusterRoleBinding]{rw("clusterrolebindings"), func(b *rbacv1.ClusterRoleBinding) reconciliation.RoleBinding {
			return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}
		}},
		RoleBindings: bindingRW[*rbacv1.RoleBinding]{rw("rolebindings"), func(b *rbacv1.RoleBinding) reconciliation.RoleBinding {
			return reconciliation.RoleBindingAdapter{RoleBinding: b}
		}},
	}, written
}

// writtenVersions are the highest resourceVersions the reconciler wrote,
// by resource. The reconciler writes from several goroutines at once.
type writtenVersions struct {
	mu  sync.Mutex
	max map[string]uint64
}

// record notes obj's resourceVersion as written to resource.
func (w *writtenVersions) record(resource string, obj runtime.Object) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	rv, err := strconv.ParseUint(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.max[resource] = max(w.max[resource], rv)
}

// get returns a copy of the versions.
func (w *writtenVersions) get() map[string]uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.max)
}

// withLoopbackUser is ctx carrying upstream's loopback identity
// (system:apiserver in system:masters), whom the start's in-process
// writes are made as: admission (webhooks and policies included) sees
// them as it sees upstream's hook's requests.
func withLoopbackUser(ctx context.Context) context.Context {
	return genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}})
}

// storeRW reads and writes one RBAC resource's objects in process.
type storeRW struct {
	ctx        context.Context
	resource   string
	store      *registry.Store
	namespaces *registry.Store
	written    *writtenVersions
}

// get reads the object from the watch cache, a copy: the reconciler
// changes what it gets, and the cache's objects are shared.
func (m storeRW) get(namespace, name string) (runtime.Object, error) {
	o, err := m.store.Get(m.ctx, namespace, name, &metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	return o.DeepCopyObject(), nil
}

// create creates obj, in a namespace made first when it is missing, as
// upstream's RoleModifier and RoleBindingClientAdapter do.
func (m storeRW) create(obj runtime.Object) (runtime.Object, error) {
	o := obj.DeepCopyObject()
	ns := o.(metav1.Object).GetNamespace()
	if ns != "" {
		if err := m.ensureNamespace(ns); err != nil {
			return nil, err
		}
	}
	out, err := m.store.Create(m.ctx, ns, o, &metav1.CreateOptions{FieldManager: loopbackFieldManager})
	if err == nil {
		m.written.record(m.resource, out)
	}
	return out, err
}

// update writes obj over the stored object: a PUT, so its
// resourceVersion must still be the stored one (else a Conflict, which
// the reconciler retries after reading again).
func (m storeRW) update(obj runtime.Object) (runtime.Object, error) {
	o := obj.DeepCopyObject()
	om := o.(metav1.Object)
	out, _, err := m.store.Update(m.ctx, &registry.UpdateRequest{
		Namespace: om.GetNamespace(), Name: om.GetName(),
		Options: metav1.UpdateOptions{FieldManager: loopbackFieldManager},
		Object:  func(context.Context, runtime.Object) (runtime.Object, error) { return o.DeepCopyObject(), nil },
	})
	if err == nil {
		m.written.record(m.resource, out)
	}
	return out, err
}

// delete deletes the object if it is still the one of uid (a binding
// whose roleRef changed is deleted and created again).
func (m storeRW) delete(namespace, name string, uid types.UID) error {
	_, _, err := m.store.Delete(m.ctx, namespace, name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	return err
}

// ensureNamespace is upstream's tryEnsureNamespace: the namespace is read
// (from the cache) and created when it is missing.
func (m storeRW) ensureNamespace(name string) error {
	if _, err := m.namespaces.Get(m.ctx, "", name, &metav1.GetOptions{ResourceVersion: "0"}); !apierrors.IsNotFound(err) {
		return err
	}
	_, err := m.namespaces.Create(m.ctx, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, &metav1.CreateOptions{FieldManager: loopbackFieldManager})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// roleRW is a reconciliation.RuleOwnerModifier of roles or clusterroles
// (T) over a storeRW; owner wraps a T as the reconciler's RuleOwner.
type roleRW[T runtime.Object] struct {
	storeRW
	owner func(T) reconciliation.RuleOwner
}

func (m roleRW[T]) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	return wrap[T, reconciliation.RuleOwner](m.get(namespace, name))(m.owner)
}

func (m roleRW[T]) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return wrap[T, reconciliation.RuleOwner](m.create(in.GetObject()))(m.owner)
}

func (m roleRW[T]) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return wrap[T, reconciliation.RuleOwner](m.update(in.GetObject()))(m.owner)
}

// bindingRW is roleRW for rolebindings and clusterrolebindings: a
// reconciliation.RoleBindingModifier.
type bindingRW[T runtime.Object] struct {
	storeRW
	binding func(T) reconciliation.RoleBinding
}

func (m bindingRW[T]) Get(namespace, name string) (reconciliation.RoleBinding, error) {
	return wrap[T, reconciliation.RoleBinding](m.get(namespace, name))(m.binding)
}

func (m bindingRW[T]) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return wrap[T, reconciliation.RoleBinding](m.create(in.GetObject()))(m.binding)
}

func (m bindingRW[T]) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return wrap[T, reconciliation.RoleBinding](m.update(in.GetObject()))(m.binding)
}

func (m bindingRW[T]) Delete(namespace, name string, uid types.UID) error {
	return m.delete(namespace, name, uid)
}

// wrap returns a function that wraps the result of a read or write as
// the reconciler's type W, or passes its error on.
func wrap[T runtime.Object, W any](o runtime.Object, err error) func(func(T) W) (W, error) {
	return func(as func(T) W) (W, error) {
		var zero W
		if err != nil {
			return zero, err
		}
		t, ok := o.(T)
		if !ok {
			return zero, fmt.Errorf("bootstrap policy: got %T", o)
		}
		return as(t), nil
	}
}
