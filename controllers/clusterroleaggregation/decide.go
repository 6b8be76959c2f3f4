// Package clusterroleaggregation fills the rules of aggregated
// ClusterRoles, as kube-controller-manager's
// clusterrole-aggregation controller (pkg/controller/clusterroleaggregation)
// does: a ClusterRole with an aggregationRule gets, in order, every rule
// of the other ClusterRoles its selectors match, each once.
package clusterroleaggregation

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Aggregate returns the rules role should have: for each selector in
// turn, the rules of the matching ClusterRoles of all (by name, role
// itself left out), without repeats. ok is false when role aggregates
// nothing. A selector that does not parse is an error (validation
// refuses them, so only an object older than that has one).
func Aggregate(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) (rules []rbacv1.PolicyRule, ok bool, err error) {
	if role.AggregationRule == nil {
		return nil, false, nil
	}
	sorted := slices.Clone(all)
	slices.SortFunc(sorted, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	rules = []rbacv1.PolicyRule{}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, true, fmt.Errorf("clusterrole %s: selector %d: %w", role.Name, i, err)
		}
		for _, other := range sorted {
			if other.Name == role.Name || !sel.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, r := range other.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, true, nil
}

// NeedsUpdate reports whether role's rules differ from want.
func NeedsUpdate(role *rbacv1.ClusterRole, want []rbacv1.PolicyRule) bool {
	if len(role.Rules) == 0 && len(want) == 0 {
		return false
	}
	return !equality.Semantic.DeepEqual(role.Rules, want)
}
