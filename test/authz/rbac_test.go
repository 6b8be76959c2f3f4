package authz_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// bindRole gives user name a Role of rules in ns and waits until the
// authorizer has it (its cache follows a watch).
func bindRole(t *testing.T, ns, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	cs := admin(t)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "role-" + strings.ReplaceAll(name, ":", "-")}, Rules: rules}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: name}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// eventually retries f until it returns nil (the authorizer's cache
// catching up) or 10 s pass, and returns its last error.
func eventually(t *testing.T, f func(ctx context.Context) error) error {
	t.Helper()
	var last error
	_ = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		last = f(ctx)
		return last == nil, nil
	})
	return last
}

func wantForbidden(t *testing.T, err error, message string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Fatalf("error %v, want 403 Forbidden", err)
	}
	if got := err.Error(); got != message {
		t.Errorf("message\n%s\nwant\n%s", got, message)
	}
}

func TestUserBoundToRoleMayDoWhatItGrantsOnly(t *testing.T) {
	ns := namespace(t)
	bindRole(t, ns, "alice", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: []string{"get", "list", "watch", "create"}})
	alice := as(t, "alice")
	if err := eventually(t, func(ctx context.Context) error {
		_, err := alice.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err
	}); err != nil {
		t.Fatalf("alice lists pods in %s: %v", ns, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	if _, err := alice.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("alice creates a configmap: %v", err)
	}
	for _, tc := range []struct {
		name    string
		call    func(ctx context.Context, cs kubernetes.Interface) error
		message string
	}{
		{"list secrets in the namespace", func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			return err
		}, `secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "` + ns + `"`},
		{"get a named secret", func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := cs.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{})
			return err
		}, `secrets "s" is forbidden: User "alice" cannot get resource "secrets" in API group "" in the namespace "` + ns + `"`},
		{"delete a configmap (verb not granted)", func(ctx context.Context, cs kubernetes.Interface) error {
			return cs.CoreV1().ConfigMaps(ns).Delete(ctx, "c", metav1.DeleteOptions{})
		}, `configmaps "c" is forbidden: User "alice" cannot delete resource "configmaps" in API group "" in the namespace "` + ns + `"`},
		{"delete every configmap", func(ctx context.Context, cs kubernetes.Interface) error {
			return cs.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		}, `configmaps is forbidden: User "alice" cannot deletecollection resource "configmaps" in API group "" in the namespace "` + ns + `"`},
		{"pods in another namespace", func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			return err
		}, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"`},
		{"a subresource", func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}}, metav1.UpdateOptions{})
			return err
		}, `pods "p" is forbidden: User "alice" cannot update resource "pods/status" in API group "" in the namespace "` + ns + `"`},
		{"a cluster-scoped resource", func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return err
		}, `nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope`},
		{"another group", func(ctx context.Context, cs kubernetes.Interface) error {
			_, err := cs.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{})
			return err
		}, `deployments.apps is forbidden: User "alice" cannot watch resource "deployments" in API group "apps" in the namespace "` + ns + `"`},
		{"a path that is no resource", func(ctx context.Context, cs kubernetes.Interface) error {
			return cs.CoreV1().RESTClient().Get().AbsPath("/metrics").Do(ctx).Error()
		}, `forbidden: User "alice" cannot get path "/metrics"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantForbidden(t, tc.call(t.Context(), alice), tc.message)
		})
	}
}

func TestEveryoneAuthenticatedReadsDiscoveryVersionAndHealth(t *testing.T) {
	// Bob has no binding: system:authenticated's bootstrap bindings
	// (system:discovery, system:basic-user, system:public-info-viewer)
	// are what let him in.
	bob := as(t, "bob")
	if _, err := bob.Discovery().ServerVersion(); err != nil {
		t.Errorf("version: %v", err)
	}
	if _, err := bob.Discovery().ServerGroups(); err != nil {
		t.Errorf("discovery: %v", err)
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		if err := bob.CoreV1().RESTClient().Get().AbsPath(path).Do(t.Context()).Error(); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	// The single checks are not public upstream either.
	err := bob.CoreV1().RESTClient().Get().AbsPath("/readyz/storage").Do(t.Context()).Error()
	wantForbidden(t, err, `forbidden: User "bob" cannot get path "/readyz/storage"`)
}

func TestBootstrapPolicyIsReconciledAtStart(t *testing.T) {
	cs := admin(t)
	ctx := t.Context()
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
		"system:public-info-viewer", "system:node", "system:node-bootstrapper", "system:kube-scheduler",
		"system:kube-controller-manager", "system:controller:replicaset-controller"} {
		if _, err := cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("clusterrole %s: %v", name, err)
		}
	}
	crb, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != "system:masters" || crb.RoleRef.Name != "cluster-admin" {
		t.Errorf("cluster-admin binding %+v %+v, want system:masters to cluster-admin", crb.Subjects, crb.RoleRef)
	}
	if _, err := cs.RbacV1().Roles("kube-system").Get(ctx, "system:controller:bootstrap-signer", metav1.GetOptions{}); err != nil {
		t.Errorf("kube-system role: %v", err)
	}
	// The aggregation controller fills view from system:aggregate-to-view.
	if err := eventually(t, func(ctx context.Context) error {
		view, err := cs.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
		if err == nil && len(view.Rules) == 0 {
			err = errNoRules
		}
		return err
	}); err != nil {
		t.Errorf("view: %v", err)
	}
}

var errNoRules = apierrors.NewBadRequest("no rules yet")
