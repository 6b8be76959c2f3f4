package authz_test

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	rbachelpers "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/kite-project/kite/apis/rbac/bootstrappolicy"
	"github.com/kite-project/kite/kitetest"
)

// TestStartReconcilesBootstrapPolicyAsUpstream edits the bootstrap policy
// of a server, restarts it on the same data, and checks that the start's
// reconciliation (written in process, docs/startup.md) did what
// upstream's rbac/bootstrap-roles hook does: missing rules, roles,
// bindings and subjects back, a user's additions kept, an object
// annotated rbac.authorization.kubernetes.io/autoupdate: "false" left as
// it is; and that the start's writes are recorded under upstream's field
// manager, "kube-apiserver".
func TestStartReconcilesBootstrapPolicyAsUpstream(t *testing.T) {
	r := kitetest.StartRestartable(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(r.Server().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	crs, crbs := cs.RbacV1().ClusterRoles(), cs.RbacV1().ClusterRoleBindings()
	const (
		restored, kept = "system:node-problem-detector", "system:persistent-volume-provisioner"
		binding        = "system:kube-dns"                           // a subject of its own removed, one added
		deletedBinding = "system:node-proxier"                       // deleted
		deletedRole    = "extension-apiserver-authentication-reader" // a Role in kube-system, deleted
	)
	userRule := rbacv1.PolicyRule{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get"}}
	userSubject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "someone"}

	fresh, err := crs.Get(ctx, restored, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if managers := managersOf(fresh.ManagedFields); !slices.Equal(managers, []string{"kube-apiserver"}) {
		t.Errorf("%s created by the managers %v, want [kube-apiserver] (upstream's loopback client)", restored, managers)
	}
	for _, name := range []string{restored, kept} {
		cr, err := crs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cr.Rules = append(cr.Rules[:1], userRule)
		if name == kept {
			cr.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
		}
		if _, err := crs.Update(ctx, cr, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := crbs.Get(ctx, binding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Subjects = []rbacv1.Subject{userSubject}
	if _, err := crbs.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := crbs.Delete(ctx, deletedBinding, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.RbacV1().Roles(metav1.NamespaceSystem).Delete(ctx, deletedRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	r.Stop()
	r.Start()

	p, err := bootstrappolicy.Load()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := p.ClusterRole(restored)
	got, err := crs.Get(ctx, restored, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if covers, missing := rbachelpers.Covers(got.Rules, want.Rules); !covers {
		t.Errorf("%s misses %v after the restart", restored, missing)
	}
	if !slices.ContainsFunc(got.Rules, func(r rbacv1.PolicyRule) bool { return slices.Equal(r.APIGroups, userRule.APIGroups) }) {
		t.Errorf("%s lost the user's rule: %v", restored, got.Rules)
	}
	if !slices.Contains(managersOf(got.ManagedFields), "kube-apiserver") {
		t.Errorf("%s updated by the managers %v, want kube-apiserver among them", restored, managersOf(got.ManagedFields))
	}
	if got, err := crs.Get(ctx, kept, metav1.GetOptions{}); err != nil || len(got.Rules) != 2 {
		t.Errorf("%s: rules %v (%v), want its edit kept (2 rules: autoupdate is off)", kept, got.Rules, err)
	}
	i := slices.IndexFunc(p.ClusterRoleBindings, func(b rbacv1.ClusterRoleBinding) bool { return b.Name == binding })
	if i < 0 {
		t.Fatalf("no ClusterRoleBinding %s in the bootstrap policy", binding)
	}
	wantBinding := p.ClusterRoleBindings[i]
	gotBinding, err := crbs.Get(ctx, binding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(wantBinding.Subjects, userSubject) {
		if !slices.Contains(gotBinding.Subjects, s) {
			t.Errorf("%s misses the subject %v after the restart: %v", binding, s, gotBinding.Subjects)
		}
	}
	if _, err := crbs.Get(ctx, deletedBinding, metav1.GetOptions{}); err != nil {
		t.Errorf("deleted ClusterRoleBinding %s not made again: %v", deletedBinding, err)
	}
	if _, err := cs.RbacV1().Roles(metav1.NamespaceSystem).Get(ctx, deletedRole, metav1.GetOptions{}); err != nil {
		t.Errorf("deleted Role %s/%s not made again: %v", metav1.NamespaceSystem, deletedRole, err)
	}
}

// managersOf is the field managers of managed fields, in order.
func managersOf(fields []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, f := range fields {
		out = append(out, f.Manager)
	}
	return out
}
