package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/listwatch"
	"github.com/kite-project/kite/registry/builtin"
)

// The authorization modes (kube-apiserver's --authorization-mode values
// Kite has).
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
	ModeNode        = "Node"
	ModeRBAC        = "RBAC"
)

// DefaultModes is kube-apiserver's usual (and Kite's default)
// --authorization-mode: Node,RBAC.
const DefaultModes = ModeNode + "," + ModeRBAC

// ParseModes splits a comma-separated --authorization-mode value and
// checks each mode is known and named once; "" means DefaultModes.
func ParseModes(value string) ([]string, error) {
	if strings.TrimSpace(value) == "" {
		value = DefaultModes
	}
	var modes []string
	for _, m := range strings.Split(value, ",") {
		m = strings.TrimSpace(m)
		switch m {
		case ModeAlwaysAllow, ModeAlwaysDeny, ModeNode, ModeRBAC:
		default:
			return nil, fmt.Errorf("authorization mode %q is not one of %s, %s, %s, %s", m, ModeAlwaysAllow, ModeAlwaysDeny, ModeNode, ModeRBAC)
		}
		if slices.Contains(modes, m) {
			return nil, fmt.Errorf("authorization mode %q is given twice", m)
		}
		modes = append(modes, m)
	}
	return modes, nil
}

// Sources are where the authorizers read their objects from: each lists
// and watches one resource in all namespaces.
type Sources struct {
	Roles, ClusterRoles, RoleBindings, ClusterRoleBindings listwatch.ListerWatcher
	// Pods feed the Node authorizer's graph.
	Pods listwatch.ListerWatcher
}

// Options configure an Authorizer.
type Options struct {
	// Modes are the authorizers in order (ParseModes); empty means
	// Node,RBAC.
	Modes []string
	// Sources are required for the RBAC and Node modes.
	Sources Sources
	// NodeRules are what a node may do beyond what the Node authorizer
	// decides itself (upstream's system:node rules).
	NodeRules []rbacv1.PolicyRule
}

// Authorizer is the API server's authorizer: system:masters first, then
// each mode in order, the first to allow or deny deciding (upstream's
// union). It is the builtin.Authorization the RBAC strategies and the
// access reviews ask, and Wrap is the HTTP filter of every request.
type Authorizer struct {
	modes      []string
	union      authorizer.Authorizer
	rules      authorizer.RuleResolver
	rbac       *RBAC
	node       *Node
	reflectors []*listwatch.Reflector
	infos      *genericapirequest.RequestInfoFactory
}

var _ builtin.Authorization = (*Authorizer)(nil)

// New builds an Authorizer; Run fills its caches.
func New(opts Options) (*Authorizer, error) {
	modes := opts.Modes
	if len(modes) == 0 {
		modes, _ = ParseModes(DefaultModes)
	}
	a := &Authorizer{
		modes: modes,
		infos: &genericapirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
	}
	// The names are upstream's (reload.go, GetNameForAuthorizerMode):
	// the union prefixes each reason with its authorizer's.
	chain := []union.NamedAuthorizer{{AuthorizerName: "kubernetes.io/system-privileged-group", Authorizer: privilegedGroups{}}}
	var resolvers []authorizer.RuleResolver
	for _, m := range modes {
		var az interface {
			authorizer.Authorizer
			authorizer.RuleResolver
		}
		switch m {
		case ModeAlwaysAllow:
			az = constant(authorizer.DecisionAllow)
		case ModeAlwaysDeny:
			az = constant(authorizer.DecisionDeny)
		case ModeNode:
			if opts.Sources.Pods == nil {
				return nil, errors.New("authz: the Node mode needs Sources.Pods")
			}
			a.node = NewNode(opts.NodeRules)
			if err := a.reflect("pods", opts.Sources.Pods, a.node.graph); err != nil {
				return nil, err
			}
			az = a.node
		case ModeRBAC:
			s := opts.Sources
			if s.Roles == nil || s.ClusterRoles == nil || s.RoleBindings == nil || s.ClusterRoleBindings == nil {
				return nil, errors.New("authz: the RBAC mode needs Sources for the four RBAC kinds")
			}
			a.rbac = NewRBAC()
			for _, r := range []struct {
				name string
				lw   listwatch.ListerWatcher
				to   listwatch.Store
			}{
				{"roles", s.Roles, a.rbac.roles},
				{"clusterroles", s.ClusterRoles, a.rbac.clusterRoles},
				{"rolebindings", s.RoleBindings, a.rbac.roleBindings},
				{"clusterrolebindings", s.ClusterRoleBindings, a.rbac.clusterRoleBindings},
			} {
				if err := a.reflect(r.name, r.lw, r.to); err != nil {
					return nil, err
				}
			}
			az = a.rbac
		default:
			return nil, fmt.Errorf("authz: unknown mode %q", m)
		}
		chain = append(chain, union.NamedAuthorizer{AuthorizerName: strings.ToLower(m), Authorizer: az})
		resolvers = append(resolvers, az)
	}
	var err error
	if a.union, err = union.New(chain...); err != nil {
		return nil, err
	}
	a.rules = union.NewRuleResolvers(resolvers...)
	return a, nil
}

func (a *Authorizer) reflect(name string, lw listwatch.ListerWatcher, to listwatch.Store) error {
	r, err := listwatch.NewReflector(listwatch.Options{Name: "authorizer " + name, ListerWatcher: lw, Store: to, PageSize: -1})
	if err != nil {
		return err
	}
	a.reflectors = append(a.reflectors, r)
	return nil
}

// Run keeps the caches filled until ctx ends.
func (a *Authorizer) Run(ctx context.Context) {
	done := make(chan struct{})
	for _, r := range a.reflectors {
		go func() {
			defer func() { done <- struct{}{} }()
			r.Run(ctx)
		}()
	}
	for range a.reflectors {
		<-done
	}
}

// WaitSynced waits until every cache has had its first list.
func (a *Authorizer) WaitSynced(ctx context.Context) error {
	for _, r := range a.reflectors {
		select {
		case <-r.Synced():
		case <-ctx.Done():
			return fmt.Errorf("authorizer caches (%s) not filled: %w", r.Name(), ctx.Err())
		}
	}
	return nil
}

// WaitFor waits until the cache of each resource named in seen
// ("roles", "clusterroles", "rolebindings", "clusterrolebindings",
// "pods") has been given a resourceVersion at least the one named with
// it: the writes made up to it are then what the authorizer decides by.
// A resource the authorizer does not cache is not waited for.
func (a *Authorizer) WaitFor(ctx context.Context, seen map[string]uint64) error {
	for _, r := range a.reflectors {
		want, ok := seen[strings.TrimPrefix(r.Name(), "authorizer ")]
		if !ok {
			continue
		}
		for {
			if rv, err := strconv.ParseUint(r.LastSyncResourceVersion(), 10, 64); err == nil && rv >= want {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("authorizer cache (%s) not at resourceVersion %d: %w", r.Name(), want, ctx.Err())
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	return nil
}

// Modes are the modes in order.
func (a *Authorizer) Modes() []string { return slices.Clone(a.modes) }

// Authorize decides attrs.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	return a.union.Authorize(ctx, attrs)
}

// ConditionsAwareAuthorize is the union's.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return a.union.ConditionsAwareAuthorize(ctx, attrs)
}

// EvaluateConditions is the union's.
func (a *Authorizer) EvaluateConditions(ctx context.Context, d authorizer.ConditionsAwareDecision, data authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return a.union.EvaluateConditions(ctx, d, data)
}

// RulesFor lists what user may do in namespace, for
// SelfSubjectRulesReview: the union of the modes' rules.
func (a *Authorizer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return a.rules.RulesFor(ctx, u, namespace)
}

// PolicyRulesFor returns the RBAC rules u holds (everything under
// AlwaysAllow, nothing without RBAC).
func (a *Authorizer) PolicyRulesFor(_ context.Context, u user.Info, namespace string) ([]rbacv1.PolicyRule, error) {
	if slices.Contains(a.modes, ModeAlwaysAllow) {
		return []rbacv1.PolicyRule{
			{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
			{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
		}, nil
	}
	if a.rbac == nil {
		return nil, nil
	}
	return a.rbac.PolicyRulesFor(u, namespace)
}

// roleRefWait is how long RoleReferenceRules waits for a role the RBAC
// cache does not hold yet.
const roleRefWait = time.Second

// RoleReferenceRules resolves a binding's role from the RBAC cache.
// Upstream reads the role from storage, so a binding written right after
// its role finds it; the cache follows the role's write by a watch event,
// so a role it does not hold yet is waited for (up to roleRefWait, polled)
// before the answer is upstream's NotFound.
func (a *Authorizer) RoleReferenceRules(ctx context.Context, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	if a.rbac == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: strings.ToLower(ref.Kind)}, ref.Name)
	}
	rules, err := a.rbac.roleReferenceRules(ref, namespace)
	if !apierrors.IsNotFound(err) {
		return rules, err
	}
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	deadline := time.NewTimer(roleRefWait)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, err
		case <-deadline.C:
			return nil, err
		case <-poll.C:
			if rules, again := a.rbac.roleReferenceRules(ref, namespace); !apierrors.IsNotFound(again) {
				return rules, again
			}
		}
	}
}

// Attributes are what upstream's authorization filter derives from a
// request (GetAuthorizerAttributes): the user, and upstream's RequestInfo
// of the path, method and query (verb get, list, watch, create, update,
// patch, delete, deletecollection for resources; the method's verb for
// other paths), with the selectors parsed.
func (a *Authorizer) Attributes(r *http.Request) (*authorizer.AttributesRecord, *genericapirequest.RequestInfo, error) {
	// Priority and fairness, before authorization, may have parsed it.
	info, ok := genericapirequest.RequestInfoFrom(r.Context())
	if !ok {
		var err error
		if info, err = a.infos.NewRequestInfo(r); err != nil {
			return nil, nil, fmt.Errorf("request info of %s %s: %w", r.Method, r.URL.Path, err)
		}
	}
	attrs := &authorizer.AttributesRecord{
		ResourceRequest: info.IsResourceRequest,
		Path:            info.Path,
		Verb:            info.Verb,
		APIGroup:        info.APIGroup,
		APIVersion:      info.APIVersion,
		Resource:        info.Resource,
		Subresource:     info.Subresource,
		Namespace:       info.Namespace,
		Name:            info.Name,
	}
	attrs.User, _ = genericapirequest.UserFrom(r.Context())
	if info.FieldSelector != "" {
		if s, err := fields.ParseSelector(info.FieldSelector); err != nil {
			attrs.FieldSelectorParsingErr = err
		} else if reqs := s.Requirements(); len(reqs) > 0 {
			attrs.FieldSelectorRequirements = reqs
		}
	}
	if info.LabelSelector != "" {
		if s, err := labels.Parse(info.LabelSelector); err != nil {
			attrs.LabelSelectorParsingErr = err
		} else if reqs, _ := s.Requirements(); len(reqs) > 0 {
			attrs.LabelSelectorRequirements = reqs
		}
	}
	return attrs, info, nil
}

// Wrap returns next behind authorization: a request goes on only if
// allowed, with the authorizer in its context (builtin.WithAuthorization)
// for what the registry checks later; otherwise it gets upstream's 403.
func (a *Authorizer) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attrs, info, err := a.Attributes(r)
		if err != nil {
			writeStatus(w, apierrors.NewInternalError(err))
			return
		}
		ctx := genericapirequest.WithRequestInfo(builtin.WithAuthorization(r.Context(), a), info)
		if attrs.User == nil {
			writeStatus(w, apierrors.NewInternalError(errors.New("no user in the request")))
			return
		}
		decision, reason, err := a.Authorize(ctx, attrs)
		if decision == authorizer.DecisionAllow {
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		if err != nil {
			klog.FromContext(ctx).Error(err, "Authorizing request", "user", attrs.User.GetName(), "verb", attrs.Verb, "path", attrs.Path)
			writeStatus(w, apierrors.NewInternalError(err))
			return
		}
		writeStatus(w, Forbidden(attrs, reason))
	})
}

// Forbidden is upstream's 403 of a refused request
// (responsewriters.Forbidden).
func Forbidden(attrs authorizer.Attributes, reason string) *apierrors.StatusError {
	msg := ForbiddenMessage(attrs)
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: attrs.GetAPIGroup(), Resource: attrs.GetResource()}
	return apierrors.NewForbidden(gr, attrs.GetName(), errors.New(msg))
}

// ForbiddenMessage is upstream's: User "x" cannot list resource "pods"
// in API group "" in the namespace "ns" (or at the cluster scope, or
// cannot get path "/p").
func ForbiddenMessage(attrs authorizer.Attributes) string {
	username := ""
	if u := attrs.GetUser(); u != nil {
		username = u.GetName()
	}
	if !attrs.IsResourceRequest() {
		return fmt.Sprintf("User %q cannot %s path %q", username, attrs.GetVerb(), attrs.GetPath())
	}
	resource := attrs.GetResource()
	if sub := attrs.GetSubresource(); sub != "" {
		resource += "/" + sub
	}
	if ns := attrs.GetNamespace(); ns != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", username, attrs.GetVerb(), resource, attrs.GetAPIGroup(), ns)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", username, attrs.GetVerb(), resource, attrs.GetAPIGroup())
}

// writeStatus writes err's Status as JSON, which every client decodes
// whatever it asked for.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.Status()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	body, mErr := json.Marshal(status)
	if mErr != nil {
		body = []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500}`)
		status.Code = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(status.Code))
	w.Write(body)
}

// privilegedGroups allows system:masters everything, before any mode
// (upstream's authorizerfactory.NewPrivilegedGroups).
type privilegedGroups struct{}

func (privilegedGroups) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if u := attrs.GetUser(); u != nil && slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (p privilegedGroups) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(p.Authorize(ctx, attrs))
}

func (privilegedGroups) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// constant is AlwaysAllow or AlwaysDeny, as upstream's.
type constant authorizer.Decision

func (c constant) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.Decision(c), "", nil
}

func (c constant) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(c.Authorize(ctx, attrs))
}

func (constant) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor is upstream's: AlwaysAllow lists everything, AlwaysDeny
// nothing.
func (c constant) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if authorizer.Decision(c) != authorizer.DecisionAllow {
		return nil, nil, false, nil
	}
	return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		[]authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}, false, nil
}
