package bootstrappolicy

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kite-project/kite/apis/rbac/validation"
)

// TestLoadHasUpstreamsRolesAndBindings checks the policy decodes whole
// and holds the roles and bindings kube-apiserver has, each valid.
func TestLoadHasUpstreamsRolesAndBindings(t *testing.T) {
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery",
		"system:public-info-viewer", "system:node", "system:node-bootstrapper", "system:kube-scheduler",
		"system:kube-controller-manager", "system:controller:replicaset-controller", "system:controller:clusterrole-aggregation-controller"} {
		r, ok := p.ClusterRole(name)
		if !ok {
			t.Errorf("ClusterRole %s missing", name)
			continue
		}
		if errs := validation.ValidateClusterRole(r, validation.ClusterRoleValidationOptions{}); len(errs) > 0 {
			t.Errorf("ClusterRole %s invalid: %v", name, errs)
		}
	}
	masters := false
	for _, b := range p.ClusterRoleBindings {
		if errs := validation.ValidateClusterRoleBinding(&b); len(errs) > 0 {
			t.Errorf("ClusterRoleBinding %s invalid: %v", b.Name, errs)
		}
		if b.Name == "cluster-admin" && b.RoleRef.Name == "cluster-admin" && len(b.Subjects) == 1 &&
			b.Subjects[0] == (rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:masters"}) {
			masters = true
		}
	}
	if !masters {
		t.Error("no cluster-admin binding of system:masters")
	}
	if len(p.Roles) == 0 || len(p.RoleBindings) == 0 {
		t.Errorf("%d namespaced roles and %d bindings, want some", len(p.Roles), len(p.RoleBindings))
	}
	for _, r := range p.Roles {
		if errs := validation.ValidateRole(&r); len(errs) > 0 {
			t.Errorf("Role %s/%s invalid: %v", r.Namespace, r.Name, errs)
		}
	}
	if len(p.ClusterRoles) < 60 || len(p.ClusterRoleBindings) < 50 {
		t.Errorf("%d ClusterRoles, %d ClusterRoleBindings: fewer than upstream's", len(p.ClusterRoles), len(p.ClusterRoleBindings))
	}
}
