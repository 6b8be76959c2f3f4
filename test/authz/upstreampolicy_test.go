package authz_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	kiteversion "github.com/kite-project/kite/version"
)

// upstreamPolicy is kube-apiserver's bootstrap policy as its own tests
// pin it (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata of
// k8s.io/kubernetes at Kite's version), read from the module cache.
type upstreamPolicy struct {
	clusterRoles    []rbacv1.ClusterRole
	clusterBindings []rbacv1.ClusterRoleBinding
	roles           []rbacv1.Role
	roleBindings    []rbacv1.RoleBinding
}

// loadUpstreamPolicy reads the policy, or skips the test when the
// k8s.io/kubernetes module is not in the module cache.
func loadUpstreamPolicy(t *testing.T) *upstreamPolicy {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("no go command to find the module cache: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "k8s.io", "kubernetes@"+strings.TrimSuffix(kiteversion.GitVersion, "+kite"),
		"plugin", "pkg", "auth", "authorizer", "rbac", "bootstrappolicy", "testdata")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("upstream's bootstrap policy is not in the module cache: %v", err)
	}
	p := &upstreamPolicy{}
	read := func(name string, into any) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"cluster-roles.yaml", "controller-roles.yaml"} {
		var l rbacv1.ClusterRoleList
		read(name, &l)
		p.clusterRoles = append(p.clusterRoles, l.Items...)
	}
	for _, name := range []string{"cluster-role-bindings.yaml", "controller-role-bindings.yaml"} {
		var l rbacv1.ClusterRoleBindingList
		read(name, &l)
		p.clusterBindings = append(p.clusterBindings, l.Items...)
	}
	var roles rbacv1.RoleList
	read("namespace-roles.yaml", &roles)
	p.roles = roles.Items
	var bindings rbacv1.RoleBindingList
	read("namespace-role-bindings.yaml", &bindings)
	p.roleBindings = bindings.Items
	return p
}

// atoms breaks rules down into one string per verb, group, resource and
// name (or verb and URL), so that rule sets compare whatever their
// grouping (reconciliation adds missing rules one atom each).
func atoms(rules []rbacv1.PolicyRule) sets.Set[string] {
	s := sets.New[string]()
	orAll := func(l []string) []string {
		if len(l) == 0 {
			return []string{"*"}
		}
		return l
	}
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				s.Insert(fmt.Sprintf("%s %s", v, u))
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range orAll(r.ResourceNames) {
						s.Insert(fmt.Sprintf("%s %s/%s %s", v, g, res, n))
					}
				}
			}
		}
	}
	return s
}

// rulesOf are a ClusterRole's rules, aggregated ones' gathered from the
// roles their selectors match, as the aggregation controller gathers them.
func (p *upstreamPolicy) rulesOf(name string) []rbacv1.PolicyRule {
	i := slices.IndexFunc(p.clusterRoles, func(r rbacv1.ClusterRole) bool { return r.Name == name })
	if i < 0 {
		return nil
	}
	r := p.clusterRoles[i]
	if r.AggregationRule == nil {
		return r.Rules
	}
	var rules []rbacv1.PolicyRule
	for _, sel := range r.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			continue
		}
		for _, o := range p.clusterRoles {
			if o.Name != name && s.Matches(labels.Set(o.Labels)) {
				rules = append(rules, p.rulesOf(o.Name)...)
			}
		}
	}
	return rules
}

// subjectMatches is RBAC's appliesTo.
func subjectMatches(s rbacv1.Subject, u user.Info, namespace string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return s.Name == u.GetName()
	case rbacv1.GroupKind:
		return slices.Contains(u.GetGroups(), s.Name)
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = namespace
		}
		return u.GetName() == "system:serviceaccount:"+ns+":"+s.Name
	}
	return false
}

// grants are upstream's rules for u in namespace: its ClusterRoleBindings'
// and namespace's RoleBindings', as a SelfSubjectRulesReview lists them.
func (p *upstreamPolicy) grants(u user.Info, namespace string) sets.Set[string] {
	s := sets.New[string]()
	for _, b := range p.clusterBindings {
		if slices.ContainsFunc(b.Subjects, func(sub rbacv1.Subject) bool { return subjectMatches(sub, u, "") }) {
			s = s.Union(atoms(p.rulesOf(b.RoleRef.Name)))
		}
	}
	for _, b := range p.roleBindings {
		if b.Namespace != namespace || !slices.ContainsFunc(b.Subjects, func(sub rbacv1.Subject) bool { return subjectMatches(sub, u, namespace) }) {
			continue
		}
		if b.RoleRef.Kind == "ClusterRole" {
			s = s.Union(atoms(p.rulesOf(b.RoleRef.Name)))
			continue
		}
		for _, r := range p.roles {
			if r.Namespace == namespace && r.Name == b.RoleRef.Name {
				s = s.Union(atoms(r.Rules))
			}
		}
	}
	return s
}

// TestBootstrapPolicyIsUpstreams compares a fresh server's RBAC objects
// and what subjects may do (SelfSubjectRulesReview, which
// `kubectl auth can-i --list` prints) with kube-apiserver 1.37's
// bootstrap policy read from the k8s.io/kubernetes module.
func TestBootstrapPolicyIsUpstreams(t *testing.T) {
	upstream := loadUpstreamPolicy(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	// A server of its own: other tests of the package edit bootstrap
	// roles on purpose.
	srv, err := kite.Start(ctx, kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", Controllers: []string{controllers.ClusterRoleAggregation}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.Controllers().WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Aggregation takes hops (view's rules reach edit, then admin), and
	// an idle queue does not cover the echo of the controller's own last
	// write still on its way: wait until every aggregated role has its
	// rules (the comparison below says what differs if they never come).
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		roles, err := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, want := range upstream.clusterRoles {
			i := slices.IndexFunc(roles.Items, func(r rbacv1.ClusterRole) bool { return r.Name == want.Name })
			if want.AggregationRule != nil && (i < 0 || !atoms(roles.Items[i].Rules).Equal(atoms(upstream.rulesOf(want.Name)))) {
				return false, nil
			}
		}
		return true, nil
	})

	t.Run("objects", func(t *testing.T) {
		roles, err := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range upstream.clusterRoles {
			i := slices.IndexFunc(roles.Items, func(r rbacv1.ClusterRole) bool { return r.Name == want.Name })
			if i < 0 {
				t.Errorf("ClusterRole %s is missing", want.Name)
				continue
			}
			got := roles.Items[i]
			if want.AggregationRule != nil {
				if got.AggregationRule == nil || len(got.AggregationRule.ClusterRoleSelectors) != len(want.AggregationRule.ClusterRoleSelectors) {
					t.Errorf("ClusterRole %s: aggregationRule %v, want %v", want.Name, got.AggregationRule, want.AggregationRule)
				}
			}
			if g, w := atoms(got.Rules), atoms(upstream.rulesOf(want.Name)); !g.Equal(w) {
				t.Errorf("ClusterRole %s: Kite grants %v more and %v less than upstream", want.Name, sets.List(g.Difference(w)), sets.List(w.Difference(g)))
			}
		}
		for _, got := range roles.Items {
			if strings.HasPrefix(got.Name, "system:") && !slices.ContainsFunc(upstream.clusterRoles, func(r rbacv1.ClusterRole) bool { return r.Name == got.Name }) {
				t.Errorf("ClusterRole %s is not upstream's", got.Name)
			}
		}
		bindings, err := cs.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range upstream.clusterBindings {
			i := slices.IndexFunc(bindings.Items, func(b rbacv1.ClusterRoleBinding) bool { return b.Name == want.Name })
			if i < 0 {
				t.Errorf("ClusterRoleBinding %s is missing", want.Name)
				continue
			}
			if got := bindings.Items[i]; got.RoleRef != want.RoleRef || len(got.Subjects) != len(want.Subjects) {
				t.Errorf("ClusterRoleBinding %s: %v %v, want %v %v", want.Name, got.RoleRef, got.Subjects, want.RoleRef, want.Subjects)
			}
		}
		for _, want := range upstream.roles {
			got, err := cs.RbacV1().Roles(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				t.Errorf("Role %s/%s: %v", want.Namespace, want.Name, err)
				continue
			}
			if g, w := atoms(got.Rules), atoms(want.Rules); !g.Equal(w) {
				t.Errorf("Role %s/%s: Kite grants %v more and %v less", want.Namespace, want.Name, sets.List(g.Difference(w)), sets.List(w.Difference(g)))
			}
		}
		for _, want := range upstream.roleBindings {
			got, err := cs.RbacV1().RoleBindings(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				t.Errorf("RoleBinding %s/%s: %v", want.Namespace, want.Name, err)
				continue
			}
			if got.RoleRef != want.RoleRef || len(got.Subjects) != len(want.Subjects) {
				t.Errorf("RoleBinding %s/%s: %v %v, want %v %v", want.Namespace, want.Name, got.RoleRef, got.Subjects, want.RoleRef, want.Subjects)
			}
		}
	})

	authenticated := func(name string, groups ...string) user.Info {
		return &user.DefaultInfo{Name: name, Groups: append(groups, user.AllAuthenticated)}
	}
	for _, u := range []user.Info{
		authenticated("jane"),
		authenticated("system:serviceaccount:default:default", "system:serviceaccounts", "system:serviceaccounts:default"),
		authenticated("system:node:x", user.NodesGroup),
		authenticated(user.KubeScheduler),
		authenticated(user.KubeControllerManager),
		authenticated("system:serviceaccount:kube-system:replicaset-controller", "system:serviceaccounts", "system:serviceaccounts:kube-system"),
	} {
		for _, ns := range []string{"default", "kube-system"} {
			t.Run("can-i --list as "+u.GetName()+" in "+ns, func(t *testing.T) {
				cfg := srv.RESTConfig()
				cfg.Impersonate = rest.ImpersonationConfig{UserName: u.GetName(), Groups: u.GetGroups()}
				as, err := kubernetes.NewForConfig(cfg)
				if err != nil {
					t.Fatal(err)
				}
				r, err := as.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var rules []rbacv1.PolicyRule
				for _, rr := range r.Status.ResourceRules {
					rules = append(rules, rbacv1.PolicyRule{Verbs: rr.Verbs, APIGroups: rr.APIGroups, Resources: rr.Resources, ResourceNames: rr.ResourceNames})
				}
				for _, nr := range r.Status.NonResourceRules {
					rules = append(rules, rbacv1.PolicyRule{Verbs: nr.Verbs, NonResourceURLs: nr.NonResourceURLs})
				}
				got, want := atoms(rules), upstream.grants(u, ns)
				if !got.Equal(want) {
					t.Errorf("Kite lists %v more and %v less than upstream's policy", sets.List(got.Difference(want)), sets.List(want.Difference(got)))
				}
			})
		}
	}
}
