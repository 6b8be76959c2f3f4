package authz

import (
	"context"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kite-project/kite/listwatch"
)

// bySubject is the index of bindings by the subjects they name.
const bySubject = "subject"

// RBAC is upstream's RBAC authorizer (plugin/pkg/auth/authorizer/rbac)
// over in-memory copies of the four kinds, with the bindings indexed by
// subject: a request looks up the bindings of its user, its groups and
// its ServiceAccount only, so its cost does not grow with the number of
// bindings of others.
type RBAC struct {
	roles               *listwatch.Indexer[*rbacv1.Role]
	clusterRoles        *listwatch.Indexer[*rbacv1.ClusterRole]
	roleBindings        *listwatch.Indexer[*rbacv1.RoleBinding]
	clusterRoleBindings *listwatch.Indexer[*rbacv1.ClusterRoleBinding]
}

// NewRBAC returns an empty RBAC authorizer; Stores says where its
// reflectors write.
func NewRBAC() *RBAC {
	return &RBAC{
		roles:        listwatch.NewIndexer(listwatch.IndexerOptions[*rbacv1.Role]{}),
		clusterRoles: listwatch.NewIndexer(listwatch.IndexerOptions[*rbacv1.ClusterRole]{}),
		roleBindings: listwatch.NewIndexer(listwatch.IndexerOptions[*rbacv1.RoleBinding]{
			Indexers: map[string]listwatch.IndexFunc[*rbacv1.RoleBinding]{bySubject: func(b *rbacv1.RoleBinding) ([]string, error) {
				return subjectKeys(b.Subjects, b.Namespace), nil
			}},
		}),
		clusterRoleBindings: listwatch.NewIndexer(listwatch.IndexerOptions[*rbacv1.ClusterRoleBinding]{
			Indexers: map[string]listwatch.IndexFunc[*rbacv1.ClusterRoleBinding]{bySubject: func(b *rbacv1.ClusterRoleBinding) ([]string, error) {
				return subjectKeys(b.Subjects, ""), nil
			}},
		}),
	}
}

// subjectKeys are the index values of a binding's subjects. In a
// RoleBinding (namespace set) each key is prefixed by the namespace, and
// a ServiceAccount without a namespace is the binding's own, as upstream's
// appliesToUser reads it.
func subjectKeys(subjects []rbacv1.Subject, namespace string) []string {
	keys := make([]string, 0, len(subjects))
	for _, s := range subjects {
		var k string
		switch s.Kind {
		case rbacv1.UserKind:
			k = "u:" + s.Name
		case rbacv1.GroupKind:
			k = "g:" + s.Name
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = namespace
			}
			if ns == "" {
				continue // matches nobody, as upstream
			}
			k = "u:" + serviceaccount.MakeUsername(ns, s.Name)
		default:
			continue
		}
		if namespace != "" {
			k = namespace + "/" + k
		}
		keys = append(keys, k)
	}
	return keys
}

// userKeys are the index values under which u's bindings are: its name
// (a ServiceAccount subject is indexed under the account's user name) and
// each of its groups.
func userKeys(u user.Info, namespace string) []string {
	prefix := ""
	if namespace != "" {
		prefix = namespace + "/"
	}
	keys := make([]string, 0, 1+len(u.GetGroups()))
	keys = append(keys, prefix+"u:"+u.GetName())
	for _, g := range u.GetGroups() {
		keys = append(keys, prefix+"g:"+g)
	}
	return keys
}

// ruleVisitor gets each rule that applies and the binding it comes from;
// it returns false to stop.
type ruleVisitor func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool

// visitRulesFor is upstream's DefaultRuleResolver.VisitRulesFor over the
// subject index: the rules of the cluster bindings of u, then of its
// bindings in namespace.
func (r *RBAC) visitRulesFor(u user.Info, namespace string, visit ruleVisitor) {
	if u == nil {
		return
	}
	seen := map[string]bool{}
	for _, key := range userKeys(u, "") {
		bindings, _ := r.clusterRoleBindings.ByIndex(bySubject, key)
		for _, b := range bindings {
			if seen[b.Name] {
				continue
			}
			seen[b.Name] = true
			rules, err := r.roleReferenceRules(b.RoleRef, "")
			if err != nil {
				if !visit(nil, nil, err) {
					return
				}
				continue
			}
			source := bindingSource{kind: "ClusterRoleBinding", name: b.Name, ref: b.RoleRef, subject: appliedSubject(u, b.Subjects, "")}
			for i := range rules {
				if !visit(source, &rules[i], nil) {
					return
				}
			}
		}
	}
	if namespace == "" {
		return
	}
	clear(seen)
	for _, key := range userKeys(u, namespace) {
		bindings, _ := r.roleBindings.ByIndex(bySubject, key)
		for _, b := range bindings {
			if seen[b.Name] {
				continue
			}
			seen[b.Name] = true
			rules, err := r.roleReferenceRules(b.RoleRef, namespace)
			if err != nil {
				if !visit(nil, nil, err) {
					return
				}
				continue
			}
			source := bindingSource{kind: "RoleBinding", name: b.Name + "/" + b.Namespace, ref: b.RoleRef, subject: appliedSubject(u, b.Subjects, namespace)}
			for i := range rules {
				if !visit(source, &rules[i], nil) {
					return
				}
			}
		}
	}
}

// roleReferenceRules resolves a binding's role; a missing one is upstream's
// NotFound.
func (r *RBAC) roleReferenceRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		role, ok := r.roles.Get(namespace + "/" + ref.Name)
		if !ok {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: "role"}, ref.Name)
		}
		return role.Rules, nil
	case "ClusterRole":
		role, ok := r.clusterRoles.Get(ref.Name)
		if !ok {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrole"}, ref.Name)
		}
		return role.Rules, nil
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// appliedSubject is the first subject of a binding that names u (for the
// allow reason).
func appliedSubject(u user.Info, subjects []rbacv1.Subject, namespace string) string {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == u.GetName() {
				return fmt.Sprintf("%s %q", s.Kind, s.Name)
			}
		case rbacv1.GroupKind:
			for _, g := range u.GetGroups() {
				if g == s.Name {
					return fmt.Sprintf("%s %q", s.Kind, s.Name)
				}
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = namespace
			}
			if serviceaccount.MatchesUsername(ns, s.Name, u.GetName()) {
				return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
			}
		}
	}
	return ""
}

// bindingSource describes a binding as upstream's allow reasons do.
type bindingSource struct {
	kind, name string
	ref        rbacv1.RoleRef
	subject    string
}

func (s bindingSource) String() string {
	return fmt.Sprintf("%s %q of %s %q to %s", s.kind, s.name, s.ref.Kind, s.ref.Name, s.subject)
}

var _ authorizer.Authorizer = (*RBAC)(nil)
var _ authorizer.RuleResolver = (*RBAC)(nil)

// Authorize allows what a rule of the user's bindings allows; otherwise it
// has no opinion (RBAC never denies).
func (r *RBAC) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	var reason string
	var errs []error
	allowed := false
	r.visitRulesFor(attrs.GetUser(), attrs.GetNamespace(), func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(attrs, rule) {
			allowed = true
			reason = "RBAC: allowed by " + source.String()
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	if allowed {
		return authorizer.DecisionAllow, reason, nil
	}
	if len(errs) > 0 {
		reason = fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs))
	}
	return authorizer.DecisionNoOpinion, reason, nil
}

// ConditionsAwareAuthorize is Authorize: RBAC has no conditions.
func (r *RBAC) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(r.Authorize(ctx, attrs))
}

// EvaluateConditions is not supported, as upstream's RBAC.
func (*RBAC) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// PolicyRulesFor returns every rule u holds in namespace and cluster-wide,
// and the errors of bindings whose role is missing.
func (r *RBAC) PolicyRulesFor(u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	r.visitRulesFor(u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// RulesFor is upstream's RBACAuthorizer.RulesFor, for
// SelfSubjectRulesReview.
func (r *RBAC) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	var resourceRules []authorizer.ResourceRuleInfo
	var nonResourceRules []authorizer.NonResourceRuleInfo
	policyRules, err := r.PolicyRulesFor(u, namespace)
	for _, p := range policyRules {
		if len(p.Resources) > 0 {
			resourceRules = append(resourceRules, &authorizer.DefaultResourceRuleInfo{Verbs: p.Verbs, APIGroups: p.APIGroups, Resources: p.Resources, ResourceNames: p.ResourceNames})
		}
		if len(p.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, &authorizer.DefaultNonResourceRuleInfo{Verbs: p.Verbs, NonResourceURLs: p.NonResourceURLs})
		}
	}
	return resourceRules, nonResourceRules, false, err
}

// RulesAllow reports whether one of rules allows attrs.
func RulesAllow(attrs authorizer.Attributes, rules ...rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(attrs, &rules[i]) {
			return true
		}
	}
	return false
}

// RuleAllows is upstream's: verb, group, resource (with "*/sub" for any
// resource's subresource) and name, or verb and non-resource path (with
// a trailing "*" as a prefix match).
func RuleAllows(attrs authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !has(rule.Verbs, attrs.GetVerb(), rbacv1.VerbAll) {
		return false
	}
	if !attrs.IsResourceRequest() {
		path := attrs.GetPath()
		for _, u := range rule.NonResourceURLs {
			if u == rbacv1.NonResourceAll || u == path || (strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*"))) {
				return true
			}
		}
		return false
	}
	if !has(rule.APIGroups, attrs.GetAPIGroup(), rbacv1.APIGroupAll) {
		return false
	}
	if !resourceMatches(rule, attrs.GetResource(), attrs.GetSubresource()) {
		return false
	}
	return len(rule.ResourceNames) == 0 || has(rule.ResourceNames, attrs.GetName(), "")
}

func resourceMatches(rule *rbacv1.PolicyRule, resource, subresource string) bool {
	combined := resource
	if subresource != "" {
		combined = resource + "/" + subresource
	}
	for _, r := range rule.Resources {
		switch {
		case r == rbacv1.ResourceAll, r == combined:
			return true
		case subresource != "" && r == "*/"+subresource:
			return true
		}
	}
	return false
}

// has reports whether set holds v or the wildcard all ("" for none).
func has(set []string, v, all string) bool {
	for _, s := range set {
		if s == v || (all != "" && s == all) {
			return true
		}
	}
	return false
}
