package authz_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbachelpers "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/kite-project/kite/apis/rbac/bootstrappolicy"
	"github.com/kite-project/kite/apiserver/authz"
)

// TestBootstrapReconcileRestoresRulesUnlessAutoupdateIsOff runs the
// start's reconciliation again after two roles lost their rules: the one
// that allows updates gets them back, the one annotated
// rbac.authorization.kubernetes.io/autoupdate: "false" keeps its edit.
func TestBootstrapReconcileRestoresRulesUnlessAutoupdateIsOff(t *testing.T) {
	cs := admin(t)
	ctx := t.Context()
	const restored, kept = "system:node-problem-detector", "system:persistent-volume-provisioner"
	for _, name := range []string{restored, kept} {
		r, err := cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r.Rules = r.Rules[:1]
		if name == kept {
			r.Annotations["rbac.authorization.kubernetes.io/autoupdate"] = "false"
		}
		if _, err := cs.RbacV1().ClusterRoles().Update(ctx, r, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, "system:node-proxier", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := bootstrappolicy.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := authz.EnsureBootstrapPolicy(ctx, cs, p); err != nil {
		t.Fatal(err)
	}
	want, _ := p.ClusterRole(restored)
	// The missing rules come back broken down (one per verb and
	// resource), as upstream's reconciliation adds them.
	r, err := cs.RbacV1().ClusterRoles().Get(ctx, restored, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if covers, missing := rbachelpers.Covers(r.Rules, want.Rules); !covers {
		t.Errorf("%s misses %v after reconciling", restored, missing)
	}
	if r, err := cs.RbacV1().ClusterRoles().Get(ctx, kept, metav1.GetOptions{}); err != nil || len(r.Rules) != 1 {
		t.Errorf("%s: %d rules (%v), want its edit kept (1)", kept, len(r.Rules), err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, "system:node-proxier", metav1.GetOptions{}); err != nil {
		t.Errorf("deleted binding not made again: %v", err)
	}
}
