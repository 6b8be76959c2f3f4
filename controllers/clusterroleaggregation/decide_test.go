package clusterroleaggregation

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func role(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func aggregating(name string, selectors ...map[string]string) *rbacv1.ClusterRole {
	r := role(name, nil)
	r.AggregationRule = &rbacv1.AggregationRule{}
	for _, s := range selectors {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: s})
	}
	return r
}

func rule(resource string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{resource}, Verbs: verbs}
}

func TestAggregate(t *testing.T) {
	pods, secrets := rule("pods", "get"), rule("secrets", "list")
	a := map[string]string{"agg": "a"}
	for _, tc := range []struct {
		name       string
		role       *rbacv1.ClusterRole
		all        []*rbacv1.ClusterRole
		want       []rbacv1.PolicyRule
		aggregates bool
	}{
		{"a plain role aggregates nothing", role("plain", nil, pods), nil, nil, false},
		{"matching roles' rules in name order", aggregating("x", a),
			[]*rbacv1.ClusterRole{role("b", a, secrets), role("a", a, pods), role("c", nil, rule("nodes", "get"))},
			[]rbacv1.PolicyRule{pods, secrets}, true},
		{"a rule two roles have comes once", aggregating("x", a),
			[]*rbacv1.ClusterRole{role("a", a, pods), role("b", a, pods, secrets)},
			[]rbacv1.PolicyRule{pods, secrets}, true},
		{"the role itself is left out", aggregating("x", map[string]string{}),
			[]*rbacv1.ClusterRole{role("a", nil, pods)},
			[]rbacv1.PolicyRule{pods}, true},
		{"selectors in turn", aggregating("x", map[string]string{"s": "2"}, map[string]string{"s": "1"}),
			[]*rbacv1.ClusterRole{role("a", map[string]string{"s": "1"}, pods), role("b", map[string]string{"s": "2"}, secrets)},
			[]rbacv1.PolicyRule{secrets, pods}, true},
		{"nothing matches: no rules", aggregating("x", a), nil, []rbacv1.PolicyRule{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Aggregate(tc.role, append(tc.all, tc.role))
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.aggregates || !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("Aggregate = %v, %v; want %v, %v", got, ok, tc.want, tc.aggregates)
			}
		})
	}
}

func TestNeedsUpdate(t *testing.T) {
	pods := rule("pods", "get")
	for _, tc := range []struct {
		name string
		have []rbacv1.PolicyRule
		want []rbacv1.PolicyRule
		need bool
	}{
		{"none and none", nil, []rbacv1.PolicyRule{}, false},
		{"same", []rbacv1.PolicyRule{pods}, []rbacv1.PolicyRule{pods}, false},
		{"one more", nil, []rbacv1.PolicyRule{pods}, true},
		{"one less", []rbacv1.PolicyRule{pods}, []rbacv1.PolicyRule{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedsUpdate(role("x", nil, tc.have...), tc.want); got != tc.need {
				t.Errorf("NeedsUpdate = %v, want %v", got, tc.need)
			}
		})
	}
}
