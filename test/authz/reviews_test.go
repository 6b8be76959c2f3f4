package authz_test

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAccessReviewsAnswerFromTheAuthorizer(t *testing.T) {
	ns := namespace(t)
	bindRole(t, ns, "carol", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}})
	cs := admin(t)
	ctx := t.Context()
	podsGet := &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods"}
	// The binding reaches the authorizer through its watch.
	if err := eventually(t, func(ctx context.Context) error {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "carol", ResourceAttributes: podsGet}}, metav1.CreateOptions{})
		if err == nil && !r.Status.Allowed {
			err = errNoRules
		}
		return err
	}); err != nil {
		t.Fatalf("carol may get pods: %v", err)
	}
	for _, tc := range []struct {
		name    string
		spec    authorizationv1.SubjectAccessReviewSpec
		allowed bool
		reason  string
	}{
		{"the user's role allows", authorizationv1.SubjectAccessReviewSpec{User: "carol", ResourceAttributes: podsGet}, true,
			`RBAC: allowed by RoleBinding "role-carol/` + ns + `" of Role "role-carol" to User "carol"`},
		{"another verb", authorizationv1.SubjectAccessReviewSpec{User: "carol", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "delete", Resource: "pods"}}, false, ""},
		{"another user", authorizationv1.SubjectAccessReviewSpec{User: "dave", ResourceAttributes: podsGet}, false, ""},
		{"system:masters", authorizationv1.SubjectAccessReviewSpec{User: "x", Groups: []string{"system:masters"}, ResourceAttributes: podsGet}, true, ""},
		{"a public path", authorizationv1.SubjectAccessReviewSpec{User: "dave", Groups: []string{"system:unauthenticated"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/healthz"}}, true,
			`RBAC: allowed by ClusterRoleBinding "system:public-info-viewer" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: tc.spec}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Allowed != tc.allowed || r.Status.Reason != tc.reason {
				t.Errorf("status %+v, want allowed %v reason %q", r.Status, tc.allowed, tc.reason)
			}
		})
	}

	t.Run("local review in its namespace", func(t *testing.T) {
		r, err := cs.AuthorizationV1().LocalSubjectAccessReviews(ns).Create(ctx, &authorizationv1.LocalSubjectAccessReview{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns},
			Spec:       authorizationv1.SubjectAccessReviewSpec{User: "carol", ResourceAttributes: podsGet}}, metav1.CreateOptions{})
		if err != nil || !r.Status.Allowed {
			t.Fatalf("local review: %+v, %v", r, err)
		}
		_, err = cs.AuthorizationV1().LocalSubjectAccessReviews(ns).Create(ctx, &authorizationv1.LocalSubjectAccessReview{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns},
			Spec: authorizationv1.SubjectAccessReviewSpec{User: "carol",
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "other", Verb: "get", Resource: "pods"}}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.resourceAttributes.namespace: Invalid value: \"other\": must match metadata.namespace") {
			t.Errorf("other namespace: %v, want 422 must match metadata.namespace", err)
		}
	})

	t.Run("invalid reviews", func(t *testing.T) {
		_, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: podsGet}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.user: Invalid value: \"\": at least one of user or group must be specified") {
			t.Errorf("no user: %v", err)
		}
		_, err = cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "exactly one of nonResourceAttributes or resourceAttributes must be specified") {
			t.Errorf("no attributes: %v", err)
		}
	})

	t.Run("self review and rules review as the user", func(t *testing.T) {
		carol := as(t, "carol")
		r, err := carol.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: podsGet}}, metav1.CreateOptions{})
		if err != nil || !r.Status.Allowed {
			t.Fatalf("self review: %+v, %v", r, err)
		}
		r, err = carol.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}}}, metav1.CreateOptions{})
		if err != nil || r.Status.Allowed {
			t.Fatalf("self review of nodes: %+v, %v", r, err)
		}
		rr, err := carol.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var pods, selfReviews bool
		for _, r := range rr.Status.ResourceRules {
			pods = pods || (len(r.Resources) == 1 && r.Resources[0] == "pods" && len(r.Verbs) == 1 && r.Verbs[0] == "get")
			for _, res := range r.Resources {
				selfReviews = selfReviews || res == "selfsubjectaccessreviews"
			}
		}
		if !pods || !selfReviews {
			t.Errorf("rules %+v: want get pods (the Role) and selfsubjectaccessreviews (system:basic-user)", rr.Status.ResourceRules)
		}
	})
}

// TestKubectlAuthCanIListAsAdmin lists the admin's rules: everything,
// through cluster-admin's binding of system:masters.
func TestKubectlAuthCanIListAsAdmin(t *testing.T) {
	out, err := kubectl(t, "auth", "can-i", "--list")
	if err != nil {
		t.Fatalf("kubectl auth can-i --list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "Resources") || !strings.Contains(out, "*.*") || !strings.Contains(out, "[*]") {
		t.Errorf("can-i --list:\n%s\nwant a line for *.* with [*]", out)
	}
	// The answer is the last line (a warning may come first).
	answer := func(out string) string { f := strings.Fields(out); return f[len(f)-1] }
	out, err = kubectl(t, "auth", "can-i", "delete", "nodes")
	if err != nil || answer(out) != "yes" {
		t.Errorf("can-i delete nodes: %q %v", out, err)
	}
	out, _ = kubectl(t, "auth", "can-i", "delete", "nodes", "--token", tokenOf("bob"))
	if answer(out) != "no" {
		t.Errorf("can-i delete nodes as bob: %q, want no", out)
	}
}
