package policy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kite-project/kite/registry"
	"github.com/kite-project/kite/registry/webhook"
)

// Options configure the policy plugins.
type Options struct {
	// Stores returns the served Store of a group resource
	// ("validatingadmissionpolicies.admissionregistration.k8s.io",
	// "namespaces") or nil. Only built-in resources are asked for, whose
	// Stores are the server's for its whole life: a Store once returned
	// is kept (nil is asked again).
	Stores func(groupResource string) *registry.Store
	// ForKind returns the served Store whose objects are of kind (a
	// policy's paramKind) or nil; asked per request.
	ForKind func(kind schema.GroupVersionKind) *registry.Store
	// Equivalents finds the resources equivalent to a request's, for
	// matchPolicy Equivalent; nil means none.
	Equivalents webhook.Equivalents
	// Authorizer is the server's, for CEL's authorizer variable; nil (or
	// a nil result) allows everything.
	Authorizer func() authorizer.UnconditionalAuthorizer
	// TypeConverter returns the structured-merge schema of a kind, for
	// ApplyConfiguration mutations; nil for a kind it does not know.
	TypeConverter func(kind schema.GroupVersionKind) managedfields.TypeConverter
	// Scheme creates, converts and encodes the built-in kinds (JSONPatch
	// mutations).
	Scheme *runtime.Scheme
	// Metrics, if set, is the registry of upstream's
	// apiserver_validating_admission_policy_* and
	// apiserver_mutating_admission_policy_* series (the server's
	// /metrics).
	Metrics prometheus.Registerer
}

// Policies evaluates the ValidatingAdmissionPolicies and
// MutatingAdmissionPolicies of the stores.
type Policies struct {
	opts    Options
	oi      admission.ObjectInterfaces
	metrics *metrics // nil: none

	mu sync.Mutex
	// compiled policies by uid/resourceVersion: a policy is compiled
	// once per version, and an old version is dropped when the map grows.
	validators map[versionKey]*validator
	mutators   map[versionKey]*mutator
	// selectors are the parsed label selectors of policies and bindings.
	selectors map[*metav1.LabelSelector]parsedSelector

	// stores keeps what opts.Stores returned (group resource → *Store).
	stores sync.Map
	// vhooks and mhooks keep each kind's policies paired
	// with their bindings while the two watch caches stay where they were.
	vhooks hookCache[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding]
	mhooks hookCache[*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding]
}

// New returns the policy plugins of opts.
func New(opts Options) *Policies {
	p := &Policies{opts: opts, metrics: newMetrics(opts.Metrics), validators: map[versionKey]*validator{}, mutators: map[versionKey]*mutator{},
		selectors: map[*metav1.LabelSelector]parsedSelector{}}
	if opts.Scheme != nil {
		p.oi = admission.NewObjectInterfacesFromScheme(opts.Scheme)
	}
	return p
}

// ValidatingPlugin is the ValidatingAdmissionPolicy plugin.
func (p *Policies) ValidatingPlugin() registry.AdmissionPlugin {
	return registry.AdmissionPlugin{Name: "ValidatingAdmissionPolicy", Validate: p.validate}
}

const mutatingPluginName = "MutatingAdmissionPolicy"

// MutatingPlugin is the MutatingAdmissionPolicy plugin.
func (p *Policies) MutatingPlugin() registry.AdmissionPlugin {
	return registry.AdmissionPlugin{Name: mutatingPluginName, Admit: p.admit}
}

const (
	validatingPolicies = "validatingadmissionpolicies.admissionregistration.k8s.io"
	validatingBindings = "validatingadmissionpolicybindings.admissionregistration.k8s.io"
	mutatingPolicies   = "mutatingadmissionpolicies.admissionregistration.k8s.io"
	mutatingBindings   = "mutatingadmissionpolicybindings.admissionregistration.k8s.io"
)

// exempt says whether a request is never subject to policies: the
// policies and bindings themselves (a policy must not lock itself in)
// and access reviews, which store nothing (upstream's excluded resources).
func exempt(a admission.Attributes) bool {
	gr := a.GetResource().GroupResource()
	switch gr.Group {
	case admissionregistrationv1.GroupName:
		switch gr.Resource {
		case "validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings":
			return true
		}
	case "authentication.k8s.io", "authorization.k8s.io":
		return true
	}
	return false
}

// bound is a policy with the bindings that name it.
type bound[P, B any] struct {
	policy   P
	bindings []B
}

// store returns the served Store of a built-in group resource, or nil.
func (p *Policies) store(resource string) *registry.Store {
	if s, ok := p.stores.Load(resource); ok {
		return s.(*registry.Store)
	}
	s := p.opts.Stores(resource)
	if s != nil {
		p.stores.Store(resource, s)
	}
	return s
}

// list returns the items of a resource from the watch cache, or nil when
// it is not served.
func (p *Policies) list(ctx context.Context, resource string) (runtime.Object, error) {
	store := p.store(resource)
	if store == nil {
		return nil, nil
	}
	list, err := store.List(ctx, "", &metainternalversion.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", resource, err)
	}
	return list, nil
}

// cacheVersion is the resourceVersion a Store's watch cache is current
// to; false when the Store has no ready watch cache (its lists then come
// from etcd and nothing can tell that they changed).
func cacheVersion(s *registry.Store) (uint64, bool) {
	if s == nil {
		return 0, false
	}
	c, ok := s.Storage().(interface {
		Ready() bool
		ResourceVersion() uint64
	})
	if !ok || !c.Ready() {
		return 0, false
	}
	rv := c.ResourceVersion()
	return rv, rv != 0
}

// hookCache is one kind's policies paired with their bindings (bind),
// with the resourceVersions the bindings' and the policies' watch caches
// had before they were listed. Any change to either moves its cache's
// resourceVersion, so while both stay the pairing is what listing them
// again would give, and every request in between uses it instead of
// listing both and pairing them again (what upstream's informer-fed
// policy source keeps too).
type hookCache[P, B any] struct {
	mu                     sync.Mutex
	valid                  bool
	bindingsRV, policiesRV uint64
	hooks                  []bound[P, B]
}

func (c *hookCache[P, B]) get(bindingsRV, policiesRV uint64) ([]bound[P, B], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid || c.bindingsRV != bindingsRV || c.policiesRV != policiesRV {
		return nil, false
	}
	return c.hooks, true
}

func (c *hookCache[P, B]) set(bindingsRV, policiesRV uint64, hooks []bound[P, B]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.valid, c.bindingsRV, c.policiesRV, c.hooks = true, bindingsRV, policiesRV, hooks
}

// bind pairs each policy with the bindings that name it, leaving out
// policies nothing binds and bindings of missing policies, sorted by
// policy name and binding name (upstream's order is a map's: any).
func bind[P, B any](policies []P, bindings []B, policyName func(P) string, bindingPolicy, bindingName func(B) string) []bound[P, B] {
	byPolicy := map[string][]B{}
	for _, b := range bindings {
		byPolicy[bindingPolicy(b)] = append(byPolicy[bindingPolicy(b)], b)
	}
	var out []bound[P, B]
	for _, pol := range policies {
		bs := byPolicy[policyName(pol)]
		if len(bs) == 0 {
			continue
		}
		sort.SliceStable(bs, func(i, j int) bool { return bindingName(bs[i]) < bindingName(bs[j]) })
		out = append(out, bound[P, B]{policy: pol, bindings: bs})
	}
	sort.SliceStable(out, func(i, j int) bool { return policyName(out[i].policy) < policyName(out[j].policy) })
	return out
}

// loadHooks lists the bindings and policies of one kind from the watch
// caches and pairs them (bind); nothing when no binding exists, which
// spares the policies' list on most clusters. The pairing is kept in
// cache (shared, read-only) until either watch cache moves on.
func loadHooks[P, B metav1.Object](ctx context.Context, p *Policies, cache *hookCache[P, B], policyRes, bindingRes string, policies func(runtime.Object) []P, bindings func(runtime.Object) []B, bindingPolicy func(B) string) ([]bound[P, B], error) {
	// The versions are read before the lists: a change landing in
	// between is in the lists and moves a version past the one kept, so
	// the next request pairs again (never the other way round).
	brv, bok := cacheVersion(p.store(bindingRes))
	prv, pok := cacheVersion(p.store(policyRes))
	keep := bok && pok
	if keep {
		if hooks, ok := cache.get(brv, prv); ok {
			return hooks, nil
		}
	}
	hooks, err := pairHooks(ctx, p, policyRes, bindingRes, policies, bindings, bindingPolicy)
	if err == nil && keep {
		cache.set(brv, prv, hooks)
	}
	return hooks, err
}

func pairHooks[P, B metav1.Object](ctx context.Context, p *Policies, policyRes, bindingRes string, policies func(runtime.Object) []P, bindings func(runtime.Object) []B, bindingPolicy func(B) string) ([]bound[P, B], error) {
	bl, err := p.list(ctx, bindingRes)
	if err != nil || bl == nil {
		return nil, err
	}
	bs := bindings(bl)
	if len(bs) == 0 {
		return nil, nil
	}
	pl, err := p.list(ctx, policyRes)
	if err != nil || pl == nil {
		return nil, err
	}
	return bind(policies(pl), bs, P.GetName, bindingPolicy, B.GetName), nil
}

// ptrs points at each item of a list.
func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// target is what a policy sees of a request: the request's resource and
// kind, or under matchPolicy Equivalent an equivalent one's, with the
// conversions between them.
type target struct {
	resource schema.GroupVersionResource
	kind     schema.GroupVersionKind
	// convert and convertBack are nil for the request's own resource.
	convert, convertBack func(ctx context.Context, obj runtime.Object) (runtime.Object, error)
}

// errNilSelector is upstream's message for a selector left nil (the API
// defaults them, so only an object written around validation has one).
const errNilSelector = "a nil %s selector was passed, please ensure selectors are initialized properly"

// matches is upstream's matching.Matcher.Matches for one set of match
// resources: namespaceSelector, objectSelector, excludeResourceRules,
// resourceRules (all resources when there are none), with matchPolicy
// Equivalent. It says which resource and kind the policy sees.
func (p *Policies) matches(ctx context.Context, a admission.Attributes, mr *admissionregistrationv1.MatchResources, memo *nsMemo) (bool, *target, error) {
	if mr.NamespaceSelector == nil {
		return false, nil, fmt.Errorf(errNilSelector, "namespace")
	}
	if mr.ObjectSelector == nil {
		return false, nil, fmt.Errorf(errNilSelector, "object")
	}
	nsMatch, nsErr := p.namespaceMatches(ctx, a, mr.NamespaceSelector, memo)
	if !nsMatch && nsErr == nil {
		return false, nil, nil
	}
	objMatch, objErr := p.objectMatches(a, mr.ObjectSelector)
	if !objMatch && objErr == nil {
		return false, nil, nil
	}
	if excluded, _, err := p.matchRules(a, mr.ExcludeResourceRules, mr.MatchPolicy); excluded || err != nil {
		return false, nil, err
	}
	t := &target{resource: a.GetResource(), kind: a.GetKind()}
	if len(mr.ResourceRules) > 0 {
		ok, matched, err := p.matchRules(a, mr.ResourceRules, mr.MatchPolicy)
		if err != nil || !ok {
			return false, nil, err
		}
		t = matched
	}
	// As upstream: a selector's error counts only when the rules match.
	if nsErr != nil {
		return false, nil, nsErr
	}
	if objErr != nil {
		return false, nil, objErr
	}
	return true, t, nil
}

// matchRules matches named rules against the request, then under
// matchPolicy Equivalent against each equivalent resource.
func (p *Policies) matchRules(a admission.Attributes, named []admissionregistrationv1.NamedRuleWithOperations, policy *admissionregistrationv1.MatchPolicyType) (bool, *target, error) {
	nameOK := func(r admissionregistrationv1.NamedRuleWithOperations) bool {
		if len(r.ResourceNames) == 0 {
			return true
		}
		for _, n := range r.ResourceNames {
			if n == a.GetName() {
				return true
			}
		}
		return false
	}
	for _, r := range named {
		if (&rules.Matcher{Rule: r.RuleWithOperations, Attr: a}).Matches() && nameOK(r) {
			return true, &target{resource: a.GetResource(), kind: a.GetKind()}, nil
		}
	}
	if policy == nil || *policy == admissionregistrationv1.Exact || p.opts.Equivalents == nil {
		return false, nil, nil
	}
	equivalents := p.opts.Equivalents(a.GetResource(), a.GetSubresource())
	for _, r := range named {
		for _, eq := range equivalents {
			if !(&rules.Matcher{Rule: r.RuleWithOperations, Attr: withResource{a, eq.Resource}}).Matches() {
				continue
			}
			if eq.Kind.Empty() {
				return false, nil, fmt.Errorf("unable to convert to %v: unknown kind", eq.Resource)
			}
			if nameOK(r) {
				return true, &target{resource: eq.Resource, kind: eq.Kind, convert: eq.Convert, convertBack: eq.ConvertBack}, nil
			}
		}
	}
	return false, nil, nil
}

// withResource is a request's attributes seen as on another resource.
type withResource struct {
	admission.Attributes
	resource schema.GroupVersionResource
}

func (w withResource) GetResource() schema.GroupVersionResource { return w.resource }

// namespaceMatches is upstream's namespace predicate: cluster-scoped
// requests (other than on namespaces) always match; a namespace's create
// or update matches its own labels; anything else the labels of its
// namespace.
func (p *Policies) namespaceMatches(ctx context.Context, a admission.Attributes, sel *metav1.LabelSelector, memo *nsMemo) (bool, error) {
	if a.GetNamespace() == "" && a.GetResource().Resource != "namespaces" {
		return true, nil
	}
	selector, err := p.selector(sel)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if selector.Empty() {
		return true, nil
	}
	var nsLabels map[string]string
	if a.GetResource().Resource == "namespaces" && a.GetSubresource() == "" && (a.GetOperation() == admission.Create || a.GetOperation() == admission.Update) {
		m, err := meta.Accessor(a.GetObject())
		if err != nil {
			return false, apierrors.NewInternalError(err)
		}
		nsLabels = m.GetLabels()
	} else {
		ns, err := memo.get(ctx, p, a.GetNamespace())
		if err != nil {
			return false, err
		}
		if ns != nil {
			nsLabels = ns.Labels
		}
	}
	return selector.Matches(labels.Set(nsLabels)), nil
}

// namespace returns a namespace from the watch cache, or from storage
// when the cache has not heard of it yet (upstream's live lookup); nil
// when namespaces are not served.
func (p *Policies) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	store := p.store("namespaces")
	if store == nil {
		return nil, nil
	}
	obj, err := store.Get(ctx, "", name, &metav1.GetOptions{ResourceVersion: "0"})
	if apierrors.IsNotFound(err) {
		obj, err = store.Get(ctx, "", name, &metav1.GetOptions{})
	}
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return nil, err
		}
		return nil, apierrors.NewInternalError(err)
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("namespace %q is a %T", name, obj))
	}
	return ns, nil
}

// namespaceObject is the namespace CEL's namespaceObject shows: the
// request's, none for cluster-scoped requests and for namespaces.
func (p *Policies) namespaceObject(ctx context.Context, a admission.Attributes, memo *nsMemo) (*corev1.Namespace, error) {
	if gvk := a.GetKind(); a.GetNamespace() == "" || (gvk.Group == "" && gvk.Version == "v1" && gvk.Kind == "Namespace") {
		return nil, nil
	}
	return memo.get(ctx, p, a.GetNamespace())
}

// nsMemo keeps the request's namespace once read: every policy and
// binding of a request matches against the same one.
type nsMemo struct {
	ns   *corev1.Namespace
	err  error
	done bool
}

func (m *nsMemo) get(ctx context.Context, p *Policies, name string) (*corev1.Namespace, error) {
	if !m.done {
		m.ns, m.err = p.namespace(ctx, name)
		m.done = true
	}
	return m.ns, m.err
}

// objectMatches is upstream's object predicate: the object's or the old
// object's labels.
func (p *Policies) objectMatches(a admission.Attributes, sel *metav1.LabelSelector) (bool, error) {
	selector, err := p.selector(sel)
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if selector.Empty() {
		return true, nil
	}
	for _, obj := range []runtime.Object{a.GetObject(), a.GetOldObject()} {
		if isNil(obj) {
			continue
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return false, apierrors.NewInternalError(err)
		}
		if selector.Matches(labels.Set(m.GetLabels())) {
			return true, nil
		}
	}
	return false, nil
}

func isNil(obj runtime.Object) bool {
	return obj == nil || reflect.ValueOf(obj).IsNil()
}

// versioned returns the request's objects as t's kind (a copy with
// apiVersion and kind set where they were not: CEL and the patchers see
// them as upstream's converted objects). readOnly says the caller only
// reads them (validation: CEL never changes its input), so a typed
// object's copy may share everything but its apiVersion and kind with the
// request's object instead of being a deep copy.
func versioned(ctx context.Context, a admission.Attributes, t *target, readOnly bool) (*admission.VersionedAttributes, error) {
	va := &admission.VersionedAttributes{Attributes: a, VersionedKind: t.kind}
	conv := func(obj runtime.Object) (runtime.Object, error) {
		if isNil(obj) {
			return nil, nil
		}
		if t.convert != nil {
			out, err := t.convert(ctx, obj)
			if err != nil {
				return nil, err
			}
			out.GetObjectKind().SetGroupVersionKind(t.kind)
			return out, nil
		}
		if obj.GetObjectKind().GroupVersionKind() != t.kind {
			obj = kindedCopy(obj, readOnly)
			obj.GetObjectKind().SetGroupVersionKind(t.kind)
		}
		return obj, nil
	}
	old, err := conv(a.GetOldObject())
	if err != nil {
		return nil, fmt.Errorf("failed to convert object version: %w", err)
	}
	obj, err := conv(a.GetObject())
	if err != nil {
		return nil, fmt.Errorf("failed to convert object version: %w", err)
	}
	if old != nil {
		va.VersionedOldObject.Set(old)
	}
	if obj != nil {
		va.VersionedObject.Set(obj)
	}
	return va, nil
}

// kindedCopy returns a copy of obj whose apiVersion and kind may be set
// without touching obj: a deep copy, or with shallow a copy of the
// top-level struct only (its TypeMeta is its own, the rest is shared).
// An unstructured object keeps its apiVersion and kind in its map, so it
// is always copied deeply.
func kindedCopy(obj runtime.Object, shallow bool) runtime.Object {
	v := reflect.ValueOf(obj)
	if _, ok := obj.(*unstructured.Unstructured); ok || !shallow || v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return obj.DeepCopyObject()
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	if out, ok := c.Interface().(runtime.Object); ok {
		return out
	}
	return obj.DeepCopyObject()
}

// paramSource is where a policy's parameters come from: the Store of
// its paramKind.
type paramSource struct {
	kind  schema.GroupVersionKind
	store *registry.Store
}

// paramSourceFor resolves a paramKind; nil for none, an error (the
// policy's configuration error) for a kind that is not served.
func (p *Policies) paramSourceFor(pk *admissionregistrationv1.ParamKind) (*paramSource, error) {
	if pk == nil {
		return nil, nil
	}
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("failed to parse paramKind APIVersion: %w", err)
	}
	kind := gv.WithKind(pk.Kind)
	var store *registry.Store
	if p.opts.ForKind != nil {
		store = p.opts.ForKind(kind)
	}
	if store == nil {
		return nil, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", kind)
	}
	return &paramSource{kind: kind, store: store}, nil
}

// params is upstream's CollectParams: the parameter objects a binding's
// paramRef selects ([nil] when the policy or binding takes none), each as
// an unstructured object with its apiVersion and kind.
func params(ctx context.Context, src *paramSource, ref *admissionregistrationv1.ParamRef, namespace string) ([]runtime.Object, error) {
	if src == nil || ref == nil {
		return []runtime.Object{nil}, nil
	}
	namespaced := src.store.Strategy().Namespaced
	ns := ""
	if namespaced {
		ns = namespace
		if ref.Namespace != "" {
			ns = ref.Namespace
		} else if ns == "" {
			return nil, fmt.Errorf("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources")
		}
	} else if ref.Namespace != "" {
		return nil, fmt.Errorf("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}
	var found []runtime.Object
	switch {
	case ref.Name != "":
		if ref.Selector != nil {
			return nil, fmt.Errorf("paramRef.name and paramRef.selector are mutually exclusive")
		}
		obj, err := src.store.Get(ctx, ns, ref.Name, &metav1.GetOptions{ResourceVersion: "0"})
		if apierrors.IsNotFound(err) {
			// The cache may lag a parameter just created (upstream
			// reads it directly then too).
			obj, err = src.store.Get(ctx, ns, ref.Name, &metav1.GetOptions{})
		}
		switch {
		case err == nil:
			found = []runtime.Object{obj}
		case apierrors.IsNotFound(err):
		default:
			return nil, err
		}
	case ref.Selector != nil:
		sel, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return nil, err
		}
		list, err := src.store.List(ctx, ns, &metainternalversion.ListOptions{ResourceVersion: "0", LabelSelector: sel})
		if err != nil {
			return nil, err
		}
		if found, err = meta.ExtractList(list); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("one of name or selector must be provided")
	}
	if len(found) == 0 && ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == admissionregistrationv1.DenyAction {
		return nil, errors.New("no params found for policy binding with `Deny` parameterNotFoundAction")
	}
	out := make([]runtime.Object, len(found))
	for i, obj := range found {
		u, err := asUnstructured(obj, src.kind)
		if err != nil {
			return nil, fmt.Errorf("param %T: %w", obj, err)
		}
		out[i] = u
	}
	return out, nil
}

// asUnstructured returns obj as an unstructured object of kind.
func asUnstructured(obj runtime.Object, kind schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	var u *unstructured.Unstructured
	if in, ok := obj.(*unstructured.Unstructured); ok {
		u = in.DeepCopy()
	} else {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		u = &unstructured.Unstructured{Object: m}
	}
	u.SetGroupVersionKind(kind)
	return u, nil
}

// authorizer returns the server's authorizer, or one that allows
// everything when the server has none.
func (p *Policies) authorizer() authorizer.UnconditionalAuthorizer {
	if p.opts.Authorizer != nil {
		if a := p.opts.Authorizer(); a != nil {
			return a
		}
	}
	return allowAll{}
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

// parsedSelector is a label selector parsed once.
type parsedSelector struct {
	selector labels.Selector
	err      error
}

// selector is metav1.LabelSelectorAsSelector, kept per selector: the
// selectors are those of policies and bindings from the watch cache,
// shared and never changed, and the kept pairing hands the same ones to
// every request until a policy or binding changes.
func (p *Policies) selector(sel *metav1.LabelSelector) (labels.Selector, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ps, ok := p.selectors[sel]; ok {
		return ps.selector, ps.err
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if len(p.selectors) > 1000 {
		clear(p.selectors) // objects changed many times: start over
	}
	p.selectors[sel] = parsedSelector{s, err}
	return s, err
}

// versionKey names one version of a policy.
type versionKey struct {
	uid             types.UID
	resourceVersion string
}

// cached returns the compiled form of a policy version, compiling it on
// first use.
func cached[T any](p *Policies, m map[versionKey]T, obj metav1.Object, compile func() T) T {
	key := versionKey{obj.GetUID(), obj.GetResourceVersion()}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := m[key]; ok {
		return c
	}
	c := compile()
	if len(m) > 1000 {
		clear(m) // policies changed many times: start over
	}
	m[key] = c
	return c
}
