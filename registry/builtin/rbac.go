package builtin

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	rbachelpers "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/kite-project/kite/apis/rbac/defaults"
	"github.com/kite-project/kite/apis/rbac/validation"
	"github.com/kite-project/kite/registry"
)

// rbacStrategies are rbac.authorization.k8s.io/v1's resources, in the
// order discovery lists them.
func rbacStrategies() []*registry.Strategy {
	return []*registry.Strategy{ClusterRoleBindings(), ClusterRoles(), RoleBindings(), Roles()}
}

// Authorization is the server's authorizer as the RBAC strategies and the
// access reviews use it. The API server puts it in each request's context
// (WithAuthorization), because the strategies are built before it.
type Authorization interface {
	authorizer.Authorizer
	authorizer.RuleResolver
	// PolicyRulesFor returns the RBAC rules user holds in namespace (and
	// cluster-wide): what escalation prevention compares a role with.
	PolicyRulesFor(ctx context.Context, u user.Info, namespace string) ([]rbacv1.PolicyRule, error)
	// RoleReferenceRules returns the rules of the role a binding in
	// bindingNamespace ("" for a ClusterRoleBinding) refers to; a missing
	// role is NotFound.
	RoleReferenceRules(ctx context.Context, ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, error)
}

type authorizationKey struct{}

// WithAuthorization returns ctx carrying a.
func WithAuthorization(ctx context.Context, a Authorization) context.Context {
	return context.WithValue(ctx, authorizationKey{}, a)
}

// AuthorizationFrom returns the authorization ctx carries.
func AuthorizationFrom(ctx context.Context) (Authorization, bool) {
	a, ok := ctx.Value(authorizationKey{}).(Authorization)
	return a, ok
}

var rbacGroupVersion = rbacv1.SchemeGroupVersion

// Roles returns the strategy of rbac.authorization.k8s.io/v1 roles.
func Roles() *registry.Strategy {
	return &registry.Strategy{
		Kind:              rbacGroupVersion.WithKind("Role"),
		Resource:          "roles",
		SingularName:      "role",
		Namespaced:        true,
		New:               func() runtime.Object { return &rbacv1.Role{} },
		NewList:           func() runtime.Object { return &rbacv1.RoleList{} },
		ValidateName:      validation.ValidateRBACName,
		ValidatesMetadata: true,
		Validate:          func(obj runtime.Object) field.ErrorList { return validation.ValidateRole(obj.(*rbacv1.Role)) },
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateRoleUpdate(obj.(*rbacv1.Role), old.(*rbacv1.Role))
		},
		AuthorizeWrite: func(ctx context.Context, obj, old runtime.Object) error {
			role := obj.(*rbacv1.Role)
			return confirmRoleNoEscalation(ctx, schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"}, role.Name, role.Namespace, obj, old, role.Rules, false)
		},
		AllowUnconditionalUpdate: true,
	}
}

// ClusterRoles returns the strategy of rbac.authorization.k8s.io/v1
// clusterroles.
func ClusterRoles() *registry.Strategy {
	return &registry.Strategy{
		Kind:              rbacGroupVersion.WithKind("ClusterRole"),
		Resource:          "clusterroles",
		SingularName:      "clusterrole",
		New:               func() runtime.Object { return &rbacv1.ClusterRole{} },
		NewList:           func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		ValidateName:      validation.ValidateRBACName,
		ValidatesMetadata: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateClusterRole(obj.(*rbacv1.ClusterRole), validation.ClusterRoleValidationOptions{})
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateClusterRoleUpdate(obj.(*rbacv1.ClusterRole), old.(*rbacv1.ClusterRole))
		},
		AuthorizeWrite: func(ctx context.Context, obj, old runtime.Object) error {
			role := obj.(*rbacv1.ClusterRole)
			aggregates := hasAggregationRule(role)
			if old != nil {
				aggregates = aggregates || hasAggregationRule(old.(*rbacv1.ClusterRole))
			}
			return confirmRoleNoEscalation(ctx, schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}, role.Name, "", obj, old, role.Rules, aggregates)
		},
		AllowUnconditionalUpdate: true,
	}
}

// RoleBindings returns the strategy of rbac.authorization.k8s.io/v1
// rolebindings.
func RoleBindings() *registry.Strategy {
	return &registry.Strategy{
		Kind:              rbacGroupVersion.WithKind("RoleBinding"),
		Resource:          "rolebindings",
		SingularName:      "rolebinding",
		Namespaced:        true,
		New:               func() runtime.Object { return &rbacv1.RoleBinding{} },
		NewList:           func() runtime.Object { return &rbacv1.RoleBindingList{} },
		Default:           func(obj runtime.Object) { defaults.RoleBinding(obj.(*rbacv1.RoleBinding)) },
		ValidateName:      validation.ValidateRBACName,
		ValidatesMetadata: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateRoleBinding(obj.(*rbacv1.RoleBinding))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateRoleBindingUpdate(obj.(*rbacv1.RoleBinding), old.(*rbacv1.RoleBinding))
		},
		AuthorizeWrite: func(ctx context.Context, obj, old runtime.Object) error {
			rb := obj.(*rbacv1.RoleBinding)
			return confirmBinding(ctx, schema.GroupResource{Group: rbacv1.GroupName, Resource: "rolebindings"}, rb.Name, rb.Namespace, obj, old, rb.RoleRef)
		},
		AllowUnconditionalUpdate: true,
	}
}

// ClusterRoleBindings returns the strategy of rbac.authorization.k8s.io/v1
// clusterrolebindings.
func ClusterRoleBindings() *registry.Strategy {
	return &registry.Strategy{
		Kind:              rbacGroupVersion.WithKind("ClusterRoleBinding"),
		Resource:          "clusterrolebindings",
		SingularName:      "clusterrolebinding",
		New:               func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		NewList:           func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		Default:           func(obj runtime.Object) { defaults.ClusterRoleBinding(obj.(*rbacv1.ClusterRoleBinding)) },
		ValidateName:      validation.ValidateRBACName,
		ValidatesMetadata: true,
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateClusterRoleBinding(obj.(*rbacv1.ClusterRoleBinding))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateClusterRoleBindingUpdate(obj.(*rbacv1.ClusterRoleBinding), old.(*rbacv1.ClusterRoleBinding))
		},
		AuthorizeWrite: func(ctx context.Context, obj, old runtime.Object) error {
			rb := obj.(*rbacv1.ClusterRoleBinding)
			return confirmBinding(ctx, schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrolebindings"}, rb.Name, "", obj, old, rb.RoleRef)
		},
		AllowUnconditionalUpdate: true,
	}
}

func hasAggregationRule(r *rbacv1.ClusterRole) bool {
	return r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}

// fullAuthority is what setting an aggregation rule needs (it can gather
// anything): * on everything.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// escalationAllowed is upstream's EscalationAllowed: system:masters may
// grant anything. Without an authorizer in the context (a server with no
// authorization configured, or a write from inside the process that is
// not a request) nothing is checked, as there is nothing to check
// against.
func escalationAllowed(ctx context.Context) (Authorization, user.Info, bool) {
	a, ok := AuthorizationFrom(ctx)
	if !ok {
		return nil, nil, true
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return a, nil, false
	}
	return a, u, slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup)
}

// confirmRoleNoEscalation is upstream's policybased role and clusterrole
// storage: a role may grant only what its author holds, unless the author
// may "escalate" it; an aggregation rule needs full authority.
func confirmRoleNoEscalation(ctx context.Context, gr schema.GroupResource, name, namespace string, obj, old runtime.Object, rules []rbacv1.PolicyRule, aggregates bool) error {
	a, u, allowed := escalationAllowed(ctx)
	if allowed || isOnlyMutatingGCFields(obj, old) {
		return nil
	}
	if u == nil {
		return apierrors.NewForbidden(gr, name, errors.New("no user on context"))
	}
	escalate := authorizer.AttributesRecord{User: u, Verb: "escalate", APIGroup: gr.Group, APIVersion: "*",
		Resource: gr.Resource, Name: name, Namespace: namespace, ResourceRequest: true}
	if d, _, _ := a.Authorize(ctx, escalate); d == authorizer.DecisionAllow {
		return nil
	}
	if err := confirmNoEscalation(ctx, a, u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	if aggregates {
		if err := confirmNoEscalation(ctx, a, u, namespace, fullAuthority); err != nil {
			return apierrors.NewForbidden(gr, name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

// confirmBinding is upstream's policybased binding storage: a binding may
// be written by who may "bind" its role, or who holds every rule of it.
func confirmBinding(ctx context.Context, gr schema.GroupResource, name, namespace string, obj, old runtime.Object, ref rbacv1.RoleRef) error {
	a, u, allowed := escalationAllowed(ctx)
	if allowed || isOnlyMutatingGCFields(obj, old) {
		return nil
	}
	if u == nil {
		return apierrors.NewForbidden(gr, name, errors.New("no user on context"))
	}
	bind := authorizer.AttributesRecord{User: u, Verb: "bind", Namespace: namespace, APIGroup: ref.APIGroup,
		APIVersion: "*", Name: ref.Name, ResourceRequest: true}
	switch ref.Kind {
	case "ClusterRole":
		bind.Resource = "clusterroles"
	case "Role":
		bind.Resource = "roles"
	}
	if bind.Resource != "" {
		if d, _, _ := a.Authorize(ctx, bind); d == authorizer.DecisionAllow {
			return nil
		}
	}
	rules, err := a.RoleReferenceRules(ctx, ref, namespace)
	if err != nil {
		return err
	}
	if err := confirmNoEscalation(ctx, a, u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	return nil
}

// confirmNoEscalation is upstream's ConfirmNoEscalation, with its
// message: the user's rules in namespace must cover rules.
func confirmNoEscalation(ctx context.Context, a Authorization, u user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	owner, resolveErr := a.PolicyRulesFor(ctx, u, namespace)
	covers, missing := rbachelpers.Covers(owner, rules)
	if covers {
		return nil
	}
	var descriptions []string
	for _, m := range compactRules(missing) {
		descriptions = append(descriptions, compactString(m))
	}
	slices.Sort(descriptions)
	descriptions = slices.Compact(descriptions)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.GetName(), u.GetGroups(), strings.Join(descriptions, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", []error{resolveErr})
	}
	return errors.New(msg)
}

// isOnlyMutatingGCFields is upstream's: an update that changes only owner
// references and finalizers needs no escalation check (the garbage
// collector makes them).
func isOnlyMutatingGCFields(obj, old runtime.Object) bool {
	if old == nil {
		return false
	}
	copied := obj.DeepCopyObject()
	cm, err := meta.Accessor(copied)
	if err != nil {
		return false
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	cm.SetOwnerReferences(om.GetOwnerReferences())
	cm.SetFinalizers(om.GetFinalizers())
	cm.SetSelfLink(om.GetSelfLink())
	cm.SetManagedFields(om.GetManagedFields())
	cm.SetResourceVersion(om.GetResourceVersion())
	return equality.Semantic.DeepEqual(copied, old)
}

type simpleResource struct {
	group, resource string
	hasName         bool
	name            string
}

// compactRules is upstream's CompactRules: rules of one group, one
// resource and at most one name that differ only by verb become one.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	compacted := make([]rbacv1.PolicyRule, 0, len(rules))
	simple := map[simpleResource]*rbacv1.PolicyRule{}
	var order []simpleResource
	for _, rule := range rules {
		key, ok := isSimpleResourceRule(&rule)
		if !ok {
			compacted = append(compacted, rule)
			continue
		}
		if existing, ok := simple[key]; ok {
			existing.Verbs = append(existing.Verbs, rule.Verbs...)
			continue
		}
		simple[key] = rule.DeepCopy()
		order = append(order, key)
	}
	for _, k := range order {
		compacted = append(compacted, *simple[k])
	}
	return compacted
}

func isSimpleResourceRule(rule *rbacv1.PolicyRule) (simpleResource, bool) {
	if len(rule.ResourceNames) > 1 || len(rule.NonResourceURLs) > 0 || len(rule.APIGroups) != 1 || len(rule.Resources) != 1 {
		return simpleResource{}, false
	}
	plain := &rbacv1.PolicyRule{APIGroups: rule.APIGroups, Resources: rule.Resources, Verbs: rule.Verbs, ResourceNames: rule.ResourceNames}
	if !reflect.DeepEqual(plain, rule) {
		return simpleResource{}, false
	}
	r := simpleResource{group: rule.APIGroups[0], resource: rule.Resources[0]}
	if len(rule.ResourceNames) == 1 {
		r.hasName, r.name = true, rule.ResourceNames[0]
	}
	return r, true
}

// compactString is upstream's rbacv1helpers.CompactString.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	var args []any
	for _, f := range []struct {
		name string
		v    []string
	}{{"APIGroups", r.APIGroups}, {"Resources", r.Resources}, {"NonResourceURLs", r.NonResourceURLs}, {"ResourceNames", r.ResourceNames}, {"Verbs", r.Verbs}} {
		if len(f.v) > 0 {
			parts = append(parts, f.name+":%q")
			args = append(args, f.v)
		}
	}
	return fmt.Sprintf("{"+strings.Join(parts, ", ")+"}", args...)
}
