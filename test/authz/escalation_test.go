package authz_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestEscalationIsRefused(t *testing.T) {
	ns := namespace(t)
	// Alice may manage roles and bindings and read pods, nothing more
	// (not "*": it includes escalate and bind).
	bindRole(t, ns, "alice",
		rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles", "rolebindings"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}})
	alice := as(t, "alice")
	readPods := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "read-pods"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}}
	if err := eventually(t, func(ctx context.Context) error {
		_, err := alice.RbacV1().Roles(ns).Create(ctx, readPods, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatalf("alice creates a role within her rights: %v", err)
	}
	ctx := t.Context()
	t.Run("a role granting more", func(t *testing.T) {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "secrets"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}}}}
		_, err := alice.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
		wantForbidden(t, err, `roles.rbac.authorization.k8s.io "secrets" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`)
	})
	t.Run("an update granting more", func(t *testing.T) {
		role, err := alice.RbacV1().Roles(ns).Get(ctx, "read-pods", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		role.Rules[0].Verbs = append(role.Rules[0].Verbs, "delete")
		_, err = alice.RbacV1().Roles(ns).Update(ctx, role, metav1.UpdateOptions{})
		wantForbidden(t, err, `roles.rbac.authorization.k8s.io "read-pods" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}`)
	})
	t.Run("a binding to a role granting more", func(t *testing.T) {
		// admin's rules come from the aggregation controller, which may
		// not have run yet right after the server started.
		if err := eventually(t, func(ctx context.Context) error {
			r, err := admin(t).RbacV1().ClusterRoles().Get(ctx, "admin", metav1.GetOptions{})
			if err == nil && len(r.Rules) == 0 {
				err = errNoRules
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "admin"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "alice"}}}
		_, err := alice.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.HasPrefix(err.Error(), `rolebindings.rbac.authorization.k8s.io "admin" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`) {
			t.Errorf("binding admin: %v", err)
		}
	})
	t.Run("a binding to a role she holds", func(t *testing.T) {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-pods"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "read-pods"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "bob"}}}
		if _, err := alice.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Errorf("binding read-pods: %v", err)
		}
	})
	t.Run("a binding to a missing role", func(t *testing.T) {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "missing"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "missing"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "bob"}}}
		_, err := alice.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("binding a missing role: %v, want 404", err)
		}
	})
	t.Run("escalate and bind verbs lift the check", func(t *testing.T) {
		bindRole(t, ns, "bob",
			rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}, Verbs: []string{"create", "escalate"}},
			rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: []string{"create"}},
			rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}, ResourceNames: []string{"edit"}})
		bob := as(t, "bob")
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "everything"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
		if err := eventually(t, func(ctx context.Context) error {
			_, err := bob.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
			return err
		}); err != nil {
			t.Errorf("bob escalates: %v", err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "edit"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "carol"}}}
		if _, err := bob.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Errorf("bob binds edit: %v", err)
		}
	})
}

func TestRBACObjectsAreValidatedAsUpstream(t *testing.T) {
	cs := admin(t)
	ns := namespace(t)
	ctx := t.Context()
	for _, tc := range []struct {
		name   string
		create func() error
		want   string
	}{
		{"a rule without verbs", func() error {
			_, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}}, metav1.CreateOptions{})
			return err
		}, field.Required(field.NewPath("rules").Index(0).Child("verbs"), "verbs must contain at least one value").Error()},
		{"a namespaced rule on a path", func() error {
			_, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r"},
				Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/x"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
			return err
		}, `rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs`},
		{"a cluster binding to a Role", func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b-" + ns},
				RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}}, metav1.CreateOptions{})
			return err
		}, `roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`},
		{"a ServiceAccount without namespace in a cluster binding", func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b-" + ns},
				RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}}}, metav1.CreateOptions{})
			return err
		}, `subjects[0].namespace: Required value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.create()
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want 422 with %q", err, tc.want)
			}
		})
	}
	t.Run("roleRef is immutable", func(t *testing.T) {
		rb, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "x"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rb.RoleRef.APIGroup != rbacv1.GroupName || rb.Subjects[0].APIGroup != rbacv1.GroupName {
			t.Errorf("defaults: roleRef %+v subject %+v, want the RBAC group", rb.RoleRef, rb.Subjects[0])
		}
		rb.RoleRef.Name = "edit"
		_, err = cs.RbacV1().RoleBindings(ns).Update(ctx, rb, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "roleRef: Invalid value") || !strings.Contains(err.Error(), "field is immutable") {
			t.Errorf("update roleRef: %v", err)
		}
	})
}

func TestAggregationAddsRulesToAggregatedRoles(t *testing.T) {
	cs := admin(t)
	ctx := t.Context()
	extra := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "test-aggregate-to-view", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list"}}},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, extra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.RbacV1().ClusterRoles().Delete(context.Background(), extra.Name, metav1.DeleteOptions{}) })
	has := func(role string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			r, err := cs.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, rule := range r.Rules {
				if len(rule.APIGroups) == 1 && rule.APIGroups[0] == "example.com" {
					return nil
				}
			}
			return errNoRules
		}
	}
	// view gets the rule, and through view's aggregate-to-edit label,
	// edit, and through edit's, admin.
	for _, role := range []string{"view", "edit", "admin"} {
		if err := eventually(t, has(role)); err != nil {
			t.Errorf("%s: %v", role, err)
		}
	}
}

func TestKubectlCreatesAndGetsRBACObjects(t *testing.T) {
	ns := namespace(t)
	for _, args := range [][]string{
		{"create", "role", "pod-reader", "-n", ns, "--verb=get,list", "--resource=pods"},
		{"create", "rolebinding", "read-pods", "-n", ns, "--role=pod-reader", "--user=alice", "--group=devs", "--serviceaccount=" + ns + ":default"},
		{"create", "clusterrole", "test-node-reader-" + ns, "--verb=get", "--resource=nodes"},
		{"create", "clusterrolebinding", "test-read-nodes-" + ns, "--clusterrole=test-node-reader-" + ns, "--user=alice"},
	} {
		if out, err := kubectl(t, args...); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() {
		cs := admin(t)
		cs.RbacV1().ClusterRoles().Delete(context.Background(), "test-node-reader-"+ns, metav1.DeleteOptions{})
		cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), "test-read-nodes-"+ns, metav1.DeleteOptions{})
	})
	out, err := kubectl(t, "get", "rolebinding", "-n", ns, "-o", "wide")
	if err != nil {
		t.Fatal(err, out)
	}
	header := strings.Fields(strings.Split(out, "\n")[0])
	if strings.Join(header, " ") != "NAME ROLE AGE USERS GROUPS SERVICEACCOUNTS" {
		t.Errorf("header %q", header)
	}
	if !strings.Contains(out, "Role/pod-reader") || !strings.Contains(out, "alice") || !strings.Contains(out, "devs") || !strings.Contains(out, ns+"/default") {
		t.Errorf("kubectl get rolebinding -o wide:\n%s", out)
	}
	out, err = kubectl(t, "get", "roles", "-n", ns)
	if err != nil || !strings.Contains(out, "CREATED AT") || !strings.Contains(out, "pod-reader") {
		t.Errorf("kubectl get roles: %v\n%s", err, out)
	}
	out, err = kubectl(t, "get", "clusterrolebinding", "test-read-nodes-"+ns)
	if err != nil || !strings.Contains(out, "ClusterRole/test-node-reader-"+ns) {
		t.Errorf("kubectl get clusterrolebinding: %v\n%s", err, out)
	}
	out, err = kubectl(t, "api-resources", "--api-group=rbac.authorization.k8s.io", "-o", "name")
	if err != nil || strings.Join(strings.Fields(out), " ") != "clusterrolebindings.rbac.authorization.k8s.io clusterroles.rbac.authorization.k8s.io rolebindings.rbac.authorization.k8s.io roles.rbac.authorization.k8s.io" {
		t.Errorf("api-resources: %v\n%s", err, out)
	}
	_ = corev1.NamespaceDefault
}
