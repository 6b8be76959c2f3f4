package authz

import (
	"context"
	"fmt"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestParseModes(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  []string
		err   bool
	}{
		{"", []string{ModeNode, ModeRBAC}, false},
		{"RBAC", []string{ModeRBAC}, false},
		{"AlwaysAllow", []string{ModeAlwaysAllow}, false},
		{" Node , RBAC ", []string{ModeNode, ModeRBAC}, false},
		{"RBAC,ABAC", nil, true},
		{"RBAC,RBAC", nil, true},
		{"rbac", nil, true},
	} {
		t.Run(tc.value, func(t *testing.T) {
			got, err := ParseModes(tc.value)
			if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
				t.Errorf("ParseModes(%q) = %v, %v; want %v, error %v", tc.value, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestRuleAllows(t *testing.T) {
	res := func(verb, group, resource, sub, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Name: name, ResourceRequest: true}
	}
	path := func(verb, p string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{Verb: verb, Path: p}
	}
	pods := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	for _, tc := range []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs authorizer.AttributesRecord
		want  bool
	}{
		{"verb, group and resource", pods, res("get", "", "pods", "", "p"), true},
		{"another verb", pods, res("delete", "", "pods", "", "p"), false},
		{"another group", pods, res("get", "apps", "pods", "", ""), false},
		{"a subresource is not its resource", pods, res("get", "", "pods", "log", "p"), false},
		{"resource/subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}}, res("get", "", "pods", "log", "p"), true},
		{"*/subresource", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"*/scale"}}, res("get", "", "deployments", "scale", "d"), true},
		{"wildcards", rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}, res("escalate", "rbac.authorization.k8s.io", "roles", "", "r"), true},
		{"named", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"a"}}, res("get", "", "pods", "", "a"), true},
		{"named, another name", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"a"}}, res("get", "", "pods", "", "b"), false},
		{"named, a list", rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"a"}}, res("list", "", "pods", "", ""), false},
		{"a path", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, path("get", "/healthz"), true},
		{"a subpath is another path", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, path("get", "/healthz/etcd"), false},
		{"a path prefix", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz/*"}}, path("get", "/healthz/etcd"), true},
		{"a resource rule never allows a path", pods, path("get", "/pods"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(tc.attrs, &tc.rule); got != tc.want {
				t.Errorf("RuleAllows = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAttributesAreUpstreams checks the attributes of requests as
// upstream's RequestInfoFactory derives them.
func TestAttributesAreUpstreams(t *testing.T) {
	a, err := New(Options{Modes: []string{ModeAlwaysAllow}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, target string
		want           authorizer.AttributesRecord
	}{
		{"GET", "/api/v1/namespaces/ns/pods", authorizer.AttributesRecord{Verb: "list", APIVersion: "v1", Namespace: "ns", Resource: "pods", ResourceRequest: true, Path: "/api/v1/namespaces/ns/pods"}},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", authorizer.AttributesRecord{Verb: "watch", APIVersion: "v1", Namespace: "ns", Resource: "pods", ResourceRequest: true, Path: "/api/v1/namespaces/ns/pods"}},
		{"GET", "/api/v1/namespaces/ns/pods/p/log", authorizer.AttributesRecord{Verb: "get", APIVersion: "v1", Namespace: "ns", Resource: "pods", Subresource: "log", Name: "p", ResourceRequest: true, Path: "/api/v1/namespaces/ns/pods/p/log"}},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments", authorizer.AttributesRecord{Verb: "deletecollection", APIGroup: "apps", APIVersion: "v1", Namespace: "ns", Resource: "deployments", ResourceRequest: true, Path: "/apis/apps/v1/namespaces/ns/deployments"}},
		{"PATCH", "/api/v1/nodes/n/status", authorizer.AttributesRecord{Verb: "patch", APIVersion: "v1", Resource: "nodes", Subresource: "status", Name: "n", ResourceRequest: true, Path: "/api/v1/nodes/n/status"}},
		{"GET", "/api/v1/namespaces/ns", authorizer.AttributesRecord{Verb: "get", APIVersion: "v1", Namespace: "ns", Resource: "namespaces", Name: "ns", ResourceRequest: true, Path: "/api/v1/namespaces/ns"}},
		{"GET", "/healthz", authorizer.AttributesRecord{Verb: "get", Path: "/healthz"}},
		{"POST", "/apis", authorizer.AttributesRecord{Verb: "post", Path: "/apis"}},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			got, _, err := a.Attributes(r)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("attributes\n%+v\nwant\n%+v", *got, tc.want)
			}
		})
	}
	// The field selector of a list becomes requirements (the Node
	// authorizer reads spec.nodeName from them).
	r := httptest.NewRequest("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn", nil)
	r = r.WithContext(genericapirequest.WithUser(r.Context(), &user.DefaultInfo{Name: "u"}))
	got, _, _ := a.Attributes(r)
	if reqs, _ := got.GetFieldSelector(); len(reqs) != 1 || reqs[0].Field != "spec.nodeName" || reqs[0].Value != "n" || got.GetUser().GetName() != "u" {
		t.Errorf("field selector %v, user %v", reqs, got.GetUser())
	}
}

// rbacWith is an RBAC authorizer whose stores hold a Role granting get
// pods in ns, bound to user "u", and n other bindings of other users.
func rbacWith(t testing.TB, n int) *RBAC {
	r := NewRBAC()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.roles.Add(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "read"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}))
	must(r.clusterRoles.Add(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "nodes"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"nodes"}}}}))
	bind := func(name, ns string, s rbacv1.Subject) {
		must(r.roleBindings.Add(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "read"}, Subjects: []rbacv1.Subject{s}}))
	}
	bind("u", "ns", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "u"})
	bind("sa", "ns", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "robot"})
	must(r.clusterRoleBindings.Add(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ops"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "nodes"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "ops"}}}))
	for i := range n {
		bind(fmt.Sprint("other-", i), "ns", rbacv1.Subject{Kind: rbacv1.UserKind, Name: fmt.Sprint("user-", i)})
	}
	return r
}

func TestRBACFindsTheBindingsOfTheUserItsGroupsAndServiceAccount(t *testing.T) {
	r := rbacWith(t, 100)
	getPods := func(u user.Info, ns string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: "get", Resource: "pods", Namespace: ns, Name: "p", ResourceRequest: true}
	}
	listNodes := func(u user.Info) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: "list", Resource: "nodes", ResourceRequest: true}
	}
	for _, tc := range []struct {
		name  string
		attrs authorizer.AttributesRecord
		want  authorizer.Decision
	}{
		{"the bound user", getPods(&user.DefaultInfo{Name: "u"}, "ns"), authorizer.DecisionAllow},
		{"in another namespace", getPods(&user.DefaultInfo{Name: "u"}, "other"), authorizer.DecisionNoOpinion},
		{"another user", getPods(&user.DefaultInfo{Name: "v"}, "ns"), authorizer.DecisionNoOpinion},
		{"one of the many others", getPods(&user.DefaultInfo{Name: "user-7"}, "ns"), authorizer.DecisionAllow},
		{"the ServiceAccount of the binding's namespace", getPods(&user.DefaultInfo{Name: "system:serviceaccount:ns:robot"}, "ns"), authorizer.DecisionAllow},
		{"a ServiceAccount of that name elsewhere", getPods(&user.DefaultInfo{Name: "system:serviceaccount:other:robot"}, "ns"), authorizer.DecisionNoOpinion},
		{"a group's cluster binding", listNodes(&user.DefaultInfo{Name: "w", Groups: []string{"ops"}}), authorizer.DecisionAllow},
		{"no group", listNodes(&user.DefaultInfo{Name: "w"}), authorizer.DecisionNoOpinion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d, reason, _ := r.Authorize(context.Background(), tc.attrs); d != tc.want {
				t.Errorf("decision %v (%s), want %v", d, reason, tc.want)
			}
		})
	}
}

// BenchmarkRBACAuthorize measures one decision among 10 and 10 000 other
// bindings of the namespace: the subject index keeps it flat.
func BenchmarkRBACAuthorize(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprint(n, "-bindings"), func(b *testing.B) {
			r := rbacWith(b, n)
			attrs := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "u", Groups: []string{"system:authenticated"}},
				Verb: "get", Resource: "pods", Namespace: "ns", Name: "p", ResourceRequest: true}
			deny := attrs
			deny.Verb = "delete"
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if d, _, _ := r.Authorize(ctx, attrs); d != authorizer.DecisionAllow {
					b.Fatal("not allowed")
				}
				if d, _, _ := r.Authorize(ctx, deny); d == authorizer.DecisionAllow {
					b.Fatal("allowed")
				}
			}
		})
	}
}

// TestNodeGraphTiesWhatPodsUse checks the graph's bookkeeping: a pod's
// update or deletion unties exactly what it tied.
func TestNodeGraphTiesWhatPodsUse(t *testing.T) {
	g := newNodeGraph()
	pod := func(name, node string, secrets ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
		for _, s := range secrets {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s}}})
		}
		return p
	}
	s := func(name string) vertex { return vertex{secretVertex, "ns", name} }
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(g.Add(pod("a", "n1", "shared", "only-a")))
	must(g.Add(pod("b", "n1", "shared")))
	must(g.Add(pod("c", "", "unbound")))
	if !g.hasPath("n1", s("shared")) || !g.hasPath("n1", s("only-a")) || g.hasPath("n1", s("unbound")) || g.hasPath("n2", s("shared")) {
		t.Fatal("ties after adds are wrong")
	}
	must(g.Update(pod("a", "n1", "shared")))
	if g.hasPath("n1", s("only-a")) || !g.hasPath("n1", s("shared")) {
		t.Error("update did not untie only-a, or untied shared")
	}
	must(g.Delete(pod("a", "n1")))
	if !g.hasPath("n1", s("shared")) {
		t.Error("deleting a untied shared, which b still uses")
	}
	must(g.Delete(pod("b", "n1")))
	if g.hasPath("n1", s("shared")) || len(g.edges) != 0 {
		t.Errorf("edges left: %v", g.edges)
	}
	done := pod("d", "n1", "x")
	done.Status.Phase = corev1.PodSucceeded
	must(g.Replace([]runtime.Object{pod("e", "n2", "y"), done}, "1"))
	if !g.hasPath("n2", s("y")) || g.hasPath("n1", s("x")) {
		t.Error("replace: a finished pod ties nothing, a running one does")
	}
}

// TestRoleReferenceWaitsForTheCache: a binding written right after its
// role finds the role although the RBAC cache receives it a moment later
// (upstream reads the role from storage); a role that never comes is
// upstream's NotFound.
func TestRoleReferenceWaitsForTheCache(t *testing.T) {
	r := NewRBAC()
	a := &Authorizer{rbac: r}
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "late"}
	added := make(chan error, 1)
	timer := time.AfterFunc(100*time.Millisecond, func() {
		added <- r.roles.Add(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}})
	})
	defer timer.Stop()
	rules, err := a.RoleReferenceRules(t.Context(), ref, "ns")
	if err != nil || len(rules) != 1 {
		t.Fatalf("role added 100 ms after the lookup began: rules %v, err %v", rules, err)
	}
	if err := <-added; err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = a.RoleReferenceRules(t.Context(), rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "never"}, "ns")
	if !apierrors.IsNotFound(err) || err.Error() != `role.rbac.authorization.k8s.io "never" not found` {
		t.Fatalf("missing role: %v, want upstream's NotFound", err)
	}
	if waited := time.Since(start); waited < roleRefWait {
		t.Fatalf("missing role answered after %v, want after the %v wait", waited, roleRefWait)
	}
}
