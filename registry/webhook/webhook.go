package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	"k8s.io/apiserver/pkg/cel/environment"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/registry"
)

// Stores returns the Store of a served resource by its group resource
// ("namespaces", "validatingwebhookconfigurations.admissionregistration.k8s.io"),
// or nil when it is not served (yet). It is asked per request.
type Stores func(groupResource string) *registry.Store

// Options configure a Dispatcher.
type Options struct {
	Stores Stores
	// Resolver turns a Service reference into an address; nil means
	// through the Stores (ServiceResolver).
	Resolver webhookutil.ServiceResolver
	// Equivalents finds the resources equivalent to a request's, for
	// webhooks whose matchPolicy is Equivalent; nil means none.
	Equivalents Equivalents
}

// Equivalents returns the resources served over the same storage as
// resource (its subresource, if any), as upstream's
// EquivalentResourceMapper: the other versions of a CRD, events.k8s.io
// events and core events.
type Equivalents func(resource schema.GroupVersionResource, subresource string) []Equivalent

// Equivalent is one resource equivalent to a request's.
type Equivalent struct {
	Resource schema.GroupVersionResource
	// Kind is the kind of its objects (of the subresource's, for a
	// subresource).
	Kind schema.GroupVersionKind
	// Convert converts an object of the request's resource into Kind;
	// ConvertBack converts one of Kind back. Both return new objects.
	Convert, ConvertBack func(ctx context.Context, obj runtime.Object) (runtime.Object, error)
}

// Dispatcher calls the webhooks of the configurations in its stores.
type Dispatcher struct {
	stores      Stores
	equivalents Equivalents
	clients     webhookutil.ClientManager
	// compiler compiles matchConditions once per webhook version.
	compiler plugincel.ConditionCompiler
	mu       sync.Mutex
	matchers map[string]matchconditions.Matcher // uid/resourceVersion/webhook
}

// New returns a Dispatcher.
func New(opts Options) (*Dispatcher, error) {
	resolver := opts.Resolver
	if resolver == nil {
		resolver = &ServiceResolver{Stores: opts.Stores}
	}
	cm, err := NewClientManager(resolver, []schema.GroupVersion{admissionv1.SchemeGroupVersion, admissionv1beta1.SchemeGroupVersion},
		admissionv1.AddToScheme, admissionv1beta1.AddToScheme)
	if err != nil {
		return nil, err
	}
	return &Dispatcher{
		stores:      opts.Stores,
		equivalents: opts.Equivalents,
		clients:     cm,
		compiler:    plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())),
		matchers:    map[string]matchconditions.Matcher{},
	}, nil
}

// NewClientManager returns upstream's webhook ClientManager for reviews
// of gvs (AdmissionReview, ConversionReview): one REST client per client
// configuration, kept and reused; no credentials of the server's; Service
// references resolved by resolver.
func NewClientManager(resolver webhookutil.ServiceResolver, gvs []schema.GroupVersion, addToScheme ...func(*runtime.Scheme) error) (webhookutil.ClientManager, error) {
	cm, err := webhookutil.NewClientManager(gvs, addToScheme...)
	if err != nil {
		return webhookutil.ClientManager{}, fmt.Errorf("webhook client manager: %w", err)
	}
	auth, err := webhookutil.NewDefaultAuthenticationInfoResolver("")
	if err != nil {
		return webhookutil.ClientManager{}, fmt.Errorf("webhook authentication: %w", err)
	}
	cm.SetAuthenticationInfoResolver(auth)
	cm.SetServiceResolver(resolver)
	if err := cm.Validate(); err != nil {
		return webhookutil.ClientManager{}, err
	}
	return cm, nil
}

const mutatingPluginName = "MutatingAdmissionWebhook"

// MutatingPlugin is the MutatingAdmissionWebhook plugin.
func (d *Dispatcher) MutatingPlugin() registry.AdmissionPlugin {
	return registry.AdmissionPlugin{Name: mutatingPluginName, Admit: d.admit}
}

// ValidatingPlugin is the ValidatingAdmissionWebhook plugin.
func (d *Dispatcher) ValidatingPlugin() registry.AdmissionPlugin {
	return registry.AdmissionPlugin{Name: "ValidatingAdmissionWebhook", Validate: d.validate}
}

// hook is one webhook of either kind, as the calls need it.
type hook struct {
	config                            string // configuration name
	key                               string // for the match-condition cache
	name                              string
	clientConfig                      admissionregistrationv1.WebhookClientConfig
	rules                             []admissionregistrationv1.RuleWithOperations
	failurePolicy                     admissionregistrationv1.FailurePolicyType
	sideEffects                       *admissionregistrationv1.SideEffectClass
	timeout                           time.Duration
	namespaceSelector, objectSelector *metav1.LabelSelector
	matchConditions                   []admissionregistrationv1.MatchCondition
	reviewVersions                    []string
	reinvoke                          bool
	// uid names the webhook across the passes of one request, as
	// upstream's accessor's: configuration, name and index.
	uid string
	// equivalent: matchPolicy Equivalent (v1's default).
	equivalent bool
}

func newHook(cfg metav1.ObjectMeta, i int, name string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations,
	fp *admissionregistrationv1.FailurePolicyType, mp *admissionregistrationv1.MatchPolicyType, se *admissionregistrationv1.SideEffectClass, timeout *int32, ns, obj *metav1.LabelSelector,
	mc []admissionregistrationv1.MatchCondition, versions []string) hook {
	h := hook{config: cfg.Name, key: fmt.Sprintf("%s/%s/%d", cfg.UID, cfg.ResourceVersion, i), uid: fmt.Sprintf("%s/%s/%d", cfg.Name, name, i), name: name, clientConfig: cc, rules: rules,
		failurePolicy: admissionregistrationv1.Fail, sideEffects: se, timeout: 10 * time.Second, namespaceSelector: ns, objectSelector: obj,
		matchConditions: mc, reviewVersions: versions, equivalent: mp == nil || *mp == admissionregistrationv1.Equivalent}
	if fp != nil {
		h.failurePolicy = *fp
	}
	if timeout != nil {
		h.timeout = time.Duration(*timeout) * time.Second
	}
	return h
}

// hooks lists the webhooks of one kind from the watch cache
// (resourceVersion "0": no round trip to etcd), sorted as upstream sorts
// them: by configuration name, then in their order.
func (d *Dispatcher) hooks(ctx context.Context, mutating bool) ([]hook, error) {
	resource := "validatingwebhookconfigurations.admissionregistration.k8s.io"
	if mutating {
		resource = "mutatingwebhookconfigurations.admissionregistration.k8s.io"
	}
	store := d.stores(resource)
	if store == nil {
		return nil, nil
	}
	list, err := store.List(ctx, "", listFromCache())
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", resource, err)
	}
	var out []hook
	switch l := list.(type) {
	case *admissionregistrationv1.MutatingWebhookConfigurationList:
		sortByName(l.Items, func(c admissionregistrationv1.MutatingWebhookConfiguration) string { return c.Name })
		for _, c := range l.Items {
			for i, w := range c.Webhooks {
				h := newHook(c.ObjectMeta, i, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects, w.TimeoutSeconds, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions, w.AdmissionReviewVersions)
				h.reinvoke = w.ReinvocationPolicy != nil && *w.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy
				out = append(out, h)
			}
		}
	case *admissionregistrationv1.ValidatingWebhookConfigurationList:
		sortByName(l.Items, func(c admissionregistrationv1.ValidatingWebhookConfiguration) string { return c.Name })
		for _, c := range l.Items {
			for i, w := range c.Webhooks {
				out = append(out, newHook(c.ObjectMeta, i, w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects, w.TimeoutSeconds, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions, w.AdmissionReviewVersions))
			}
		}
	}
	return out, nil
}

// exempt says whether a request is never sent to webhooks: the webhook
// configurations and admission policies themselves, as upstream's
// IsExemptAdmissionConfigurationResource.
func exempt(a admission.Attributes) bool {
	return a.GetResource().Group == admissionregistrationv1.GroupName
}

func (d *Dispatcher) admit(ctx context.Context, a admission.Attributes) error {
	if exempt(a) {
		return nil
	}
	hooks, err := d.hooks(ctx, true)
	if err != nil || len(hooks) == 0 {
		return err
	}
	// reinvocationPolicy IfNeeded as upstream's: a webhook called before
	// a later one (or, on the chain's second pass, a policy or built-in
	// plugin) changed the object is called once more on the second pass.
	r := registry.BeginReinvocations(a, mutatingPluginName)
	defer r.End()
	for _, h := range hooks {
		if r.Skip(h.uid) {
			continue
		}
		changed, invoked, err := d.callIfMatches(ctx, h, a, true)
		if invoked {
			r.Called(h.uid, changed, h.reinvoke)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *Dispatcher) validate(ctx context.Context, a admission.Attributes) error {
	if exempt(a) {
		return nil
	}
	hooks, err := d.hooks(ctx, false)
	if err != nil || len(hooks) == 0 {
		return err
	}
	errs := make([]error, len(hooks))
	var wg sync.WaitGroup
	for i, h := range hooks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = d.callIfMatches(ctx, h, a, false)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// callIfMatches calls h when it matches the request and returns whether
// it changed the object and whether it was called.
func (d *Dispatcher) callIfMatches(ctx context.Context, h hook, a admission.Attributes, mutating bool) (changed, called bool, err error) {
	inv, err := d.matches(ctx, h, a)
	if err != nil || inv == nil {
		return false, false, err
	}
	if a.IsDryRun() && (h.sideEffects == nil || (*h.sideEffects != admissionregistrationv1.SideEffectClassNone && *h.sideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun)) {
		return false, false, apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", h.name))
	}
	changed, err = d.call(ctx, h, a, inv, mutating)
	var callErr *webhookutil.ErrCallingWebhook
	if errors.As(err, &callErr) {
		if h.failurePolicy == admissionregistrationv1.Ignore {
			warning.AddWarning(ctx, "", fmt.Sprintf("failed calling webhook %q, failing open: %v", h.name, callErr.Reason))
			return false, true, nil
		}
		if callErr.Status != nil {
			return false, true, callErr.Status
		}
		return false, true, apierrors.NewInternalError(err)
	}
	return changed, true, err
}

// invocation is how a webhook is called for a request: with the
// request's resource and objects, or (matchPolicy Equivalent) an
// equivalent resource's, the objects converted to its kind.
type invocation struct {
	resource          schema.GroupVersionResource
	kind              schema.GroupVersionKind
	object, oldObject runtime.Object
	// convertBack converts a patched object back to the request's
	// kind; nil when nothing was converted.
	convertBack func(ctx context.Context, obj runtime.Object) (runtime.Object, error)
}

// matches is upstream's ShouldCallHook: rules (for matchPolicy
// Equivalent, on the request's resource first, then on its equivalents),
// namespaceSelector, objectSelector, matchConditions. It returns nil when
// h is not to be called.
func (d *Dispatcher) matches(ctx context.Context, h hook, a admission.Attributes) (*invocation, error) {
	inv, err := d.matchRules(ctx, h, a)
	if err != nil || inv == nil {
		return nil, err
	}
	ok, err := d.namespaceMatches(ctx, h.namespaceSelector, a)
	if err != nil || !ok {
		return nil, err
	}
	if ok, err := objectMatches(h.objectSelector, a); err != nil || !ok {
		return nil, err
	}
	if len(h.matchConditions) == 0 {
		return inv, nil
	}
	m := d.matcher(h)
	res := m.Match(ctx, &admission.VersionedAttributes{Attributes: a, VersionedKind: inv.kind,
		VersionedObject: admission.NewLazyObject(inv.object), VersionedOldObject: admission.NewLazyObject(inv.oldObject)}, nil, nil)
	if res.Error != nil {
		return nil, apierrors.NewInternalError(&webhookutil.ErrCallingWebhook{WebhookName: h.name, Reason: fmt.Errorf("failed to evaluate match conditions: %w", res.Error)})
	}
	if !res.Matches {
		return nil, nil
	}
	return inv, nil
}

// matchRules matches h's rules against the request, then, under
// matchPolicy Equivalent, against each equivalent resource in turn, and
// says how to call h for the first that matches.
func (d *Dispatcher) matchRules(ctx context.Context, h hook, a admission.Attributes) (*invocation, error) {
	for _, r := range h.rules {
		if (&rules.Matcher{Rule: r, Attr: a}).Matches() {
			return &invocation{resource: a.GetResource(), kind: a.GetKind(), object: a.GetObject(), oldObject: a.GetOldObject()}, nil
		}
	}
	if !h.equivalent || d.equivalents == nil {
		return nil, nil
	}
	equivalents := d.equivalents(a.GetResource(), a.GetSubresource())
	for _, r := range h.rules {
		for _, eq := range equivalents {
			if !(&rules.Matcher{Rule: r, Attr: withResource{a, eq.Resource}}).Matches() {
				continue
			}
			inv := &invocation{resource: eq.Resource, kind: eq.Kind, convertBack: eq.ConvertBack}
			var err error
			if inv.object, err = convertIfAny(ctx, eq.Convert, a.GetObject()); err != nil {
				return nil, apierrors.NewInternalError(fmt.Errorf("failed to convert object for webhook %q to %v: %w", h.name, eq.Kind, err))
			}
			if inv.oldObject, err = convertIfAny(ctx, eq.Convert, a.GetOldObject()); err != nil {
				return nil, apierrors.NewInternalError(fmt.Errorf("failed to convert old object for webhook %q to %v: %w", h.name, eq.Kind, err))
			}
			return inv, nil
		}
	}
	return nil, nil
}

func convertIfAny(ctx context.Context, convert func(context.Context, runtime.Object) (runtime.Object, error), obj runtime.Object) (runtime.Object, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, nil
	}
	return convert(ctx, obj)
}

// withResource is a request's attributes seen as on another resource,
// for rule matching (upstream's attrWithResourceOverride).
type withResource struct {
	admission.Attributes
	resource schema.GroupVersionResource
}

func (w withResource) GetResource() schema.GroupVersionResource { return w.resource }

// matcher compiles h's matchConditions once per version of its
// configuration.
func (d *Dispatcher) matcher(h hook) matchconditions.Matcher {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m, ok := d.matchers[h.key]; ok {
		return m
	}
	accessors := make([]plugincel.ExpressionAccessor, len(h.matchConditions))
	for i := range h.matchConditions {
		mc := matchconditions.MatchCondition(h.matchConditions[i])
		accessors[i] = &mc
	}
	filter := d.compiler.CompileCondition(accessors, plugincel.OptionalVariableDeclarations{HasAuthorizer: true}, environment.StoredExpressions)
	fp := h.failurePolicy
	m := matchconditions.NewMatcher(filter, &fp, "webhook", "admit", h.name)
	if len(d.matchers) > 1000 {
		clear(d.matchers) // configurations changed many times: start over
	}
	d.matchers[h.key] = m
	return m
}

func (d *Dispatcher) namespaceMatches(ctx context.Context, sel *metav1.LabelSelector, a admission.Attributes) (bool, error) {
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || sel == nil || selector.Empty() {
		return err == nil, err
	}
	var nsLabels map[string]string
	switch {
	case a.GetResource().GroupResource() == corev1.Resource("namespaces"):
		obj := a.GetObject()
		if obj == nil {
			obj = a.GetOldObject()
		}
		if m, err := meta.Accessor(obj); err == nil {
			nsLabels = m.GetLabels()
		}
	case a.GetNamespace() == "":
		// A cluster-scoped resource: the selector does not apply.
		return true, nil
	default:
		store := d.stores("namespaces")
		if store == nil {
			return true, nil
		}
		ns, err := store.Get(ctx, "", a.GetNamespace(), &metav1.GetOptions{ResourceVersion: "0"})
		if apierrors.IsNotFound(err) {
			// As upstream's matcher: the cache may lag a namespace just
			// created, so ask etcd; a namespace that truly does not exist
			// is the request's 404.
			ns, err = store.Get(ctx, "", a.GetNamespace(), &metav1.GetOptions{})
		}
		if err != nil {
			return false, err
		}
		nsLabels = ns.(*corev1.Namespace).Labels
	}
	return selector.Matches(labels.Set(nsLabels)), nil
}

func objectMatches(sel *metav1.LabelSelector, a admission.Attributes) (bool, error) {
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || sel == nil || selector.Empty() {
		return err == nil, err
	}
	for _, obj := range []runtime.Object{a.GetObject(), a.GetOldObject()} {
		if obj == nil {
			continue
		}
		if m, err := meta.Accessor(obj); err == nil && selector.Matches(labels.Set(m.GetLabels())) {
			return true, nil
		}
	}
	return false, nil
}

// call sends one AdmissionReview and applies its answer.
func (d *Dispatcher) call(ctx context.Context, h hook, a admission.Attributes, inv *invocation, mutating bool) (bool, error) {
	version := ""
	for _, v := range h.reviewVersions {
		if v == "v1" || v == "v1beta1" {
			version = v
			break
		}
	}
	if version == "" {
		return false, &webhookutil.ErrCallingWebhook{WebhookName: h.name, Reason: fmt.Errorf("webhook does not accept known AdmissionReview versions (v1, v1beta1)")}
	}
	uid := types.UID(uuid.NewUUID())
	req, err := admissionRequest(a, inv, uid)
	if err != nil {
		return false, &webhookutil.ErrCallingWebhook{WebhookName: h.name, Reason: fmt.Errorf("could not create admission objects: %w", err)}
	}
	cc := webhookutil.ClientConfig{Name: h.name, CABundle: h.clientConfig.CABundle}
	if h.clientConfig.URL != nil {
		cc.URL = *h.clientConfig.URL
	}
	if s := h.clientConfig.Service; s != nil {
		cc.Service = &webhookutil.ClientConfigService{Name: s.Name, Namespace: s.Namespace, Port: 443}
		if s.Port != nil {
			cc.Service.Port = *s.Port
		}
		if s.Path != nil {
			cc.Service.Path = *s.Path
		}
	}
	client, err := d.clients.HookClient(cc)
	if err != nil {
		return false, &webhookutil.ErrCallingWebhook{WebhookName: h.name, Reason: fmt.Errorf("could not get REST client: %w", err)}
	}
	callCtx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	post := func() *rest.Request { return withDeadline(callCtx, client.Post()) }
	var body runtime.Object
	var resp *admissionv1.AdmissionResponse
	if version == "v1" {
		body = &admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req}
		out := &admissionv1.AdmissionReview{}
		if err := post().Body(body).Do(callCtx).Into(out); err != nil {
			return false, callError(h, err)
		}
		resp = out.Response
	} else {
		reqB := admissionv1beta1.AdmissionRequest{}
		if err := convertJSON(req, &reqB); err != nil {
			return false, &webhookutil.ErrCallingWebhook{WebhookName: h.name, Reason: err}
		}
		body = &admissionv1beta1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1beta1", Kind: "AdmissionReview"}, Request: &reqB}
		out := &admissionv1beta1.AdmissionReview{}
		if err := post().Body(body).Do(callCtx).Into(out); err != nil {
			return false, callError(h, err)
		}
		if out.Response != nil {
			resp = &admissionv1.AdmissionResponse{}
			if err := convertJSON(out.Response, resp); err != nil {
				return false, &webhookutil.ErrCallingWebhook{WebhookName: h.name, Reason: err}
			}
			if resp.UID == "" {
				resp.UID = uid // v1beta1 did not require it back
			}
		}
	}
	if resp == nil {
		return false, &webhookutil.ErrCallingWebhook{WebhookName: h.name, Reason: fmt.Errorf("webhook response was absent")}
	}
	if resp.UID != uid {
		return false, &webhookutil.ErrCallingWebhook{WebhookName: h.name, Reason: fmt.Errorf("expected response.uid=%q, got %q", uid, resp.UID)}
	}
	for _, w := range resp.Warnings {
		warning.AddWarning(ctx, "", w)
	}
	if !resp.Allowed {
		return false, toStatusErr(h.name, resp.Result)
	}
	if !mutating || len(resp.Patch) == 0 {
		return false, nil
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		return false, &webhookutil.ErrCallingWebhook{WebhookName: h.name, Reason: fmt.Errorf("unsupported patch type %v", resp.PatchType)}
	}
	changed, err := applyPatch(ctx, a, inv, req.Object.Raw, resp.Patch)
	if err != nil {
		return false, apierrors.NewInternalError(fmt.Errorf("admission webhook %q returned a patch that cannot be applied: %w", h.name, err))
	}
	return changed, nil
}

func callError(h hook, err error) error {
	// Only the error itself, not one it wraps, as upstream's dispatchers
	// assert it: a Service's resolver error wrapped in the dial's
	// *url.Error is a failure to call, not the webhook's answer.
	status, ok := err.(*apierrors.StatusError)
	if ok && status.Status().Code >= http.StatusBadRequest && status.Status().Code != http.StatusInternalServerError {
		// The webhook answered with an error status of its own.
		s := status.Status()
		return &webhookutil.ErrCallingWebhook{WebhookName: h.name, Reason: fmt.Errorf("failed to call webhook: %w", err), Status: &apierrors.StatusError{ErrStatus: s}}
	}
	return &webhookutil.ErrCallingWebhook{WebhookName: h.name, Reason: fmt.Errorf("failed to call webhook: %w", err)}
}

// toStatusErr is upstream's webhookerrors.ToStatusErr.
func toStatusErr(name string, result *metav1.Status) *apierrors.StatusError {
	deniedBy := fmt.Sprintf("admission webhook %q denied the request", name)
	if result == nil {
		result = &metav1.Status{Status: metav1.StatusFailure}
	}
	if result.Code < http.StatusBadRequest {
		result.Code = http.StatusBadRequest
	}
	if result.Status == "" || result.Status == metav1.StatusSuccess {
		result.Status = metav1.StatusFailure
	}
	switch {
	case result.Message != "":
		result.Message = fmt.Sprintf("%s: %s", deniedBy, result.Message)
	case result.Reason != "":
		result.Message = fmt.Sprintf("%s: %s", deniedBy, result.Reason)
	default:
		result.Message = deniedBy + " without explanation"
	}
	return &apierrors.StatusError{ErrStatus: *result}
}

// admissionRequest is upstream's request: the attributes, with the
// objects and options as JSON of their kinds.
func admissionRequest(a admission.Attributes, inv *invocation, uid types.UID) (*admissionv1.AdmissionRequest, error) {
	gvr, gvk := inv.resource, inv.kind
	// kind and resource are the webhook's (an equivalent one's under
	// matchPolicy Equivalent), requestKind and requestResource the
	// request's.
	req := plugincel.CreateAdmissionRequest(a, metav1.GroupVersionResource{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource}, metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind})
	req.UID = uid
	req.Object.Object, req.OldObject.Object = nil, nil
	var err error
	if req.Object.Raw, err = encode(inv.object, gvk); err != nil {
		return nil, err
	}
	if req.OldObject.Raw, err = encode(inv.oldObject, gvk); err != nil {
		return nil, err
	}
	if opts := a.GetOperationOptions(); opts != nil {
		kind := reflect.TypeOf(opts).Elem().Name()
		if req.Options.Raw, err = encode(opts, metav1.SchemeGroupVersion.WithKind(kind)); err != nil {
			return nil, err
		}
	}
	req.Options.Object = nil
	return req, nil
}

// encode returns obj as JSON with its apiVersion and kind.
func encode(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, nil
	}
	if obj.GetObjectKind().GroupVersionKind() != gvk {
		obj = obj.DeepCopyObject()
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return json.Marshal(obj)
}

// applyPatch applies a JSON patch to the object as sent and puts the
// result in the attributes' object, in place (converted back to the
// request's kind when the webhook got an equivalent one).
func applyPatch(ctx context.Context, a admission.Attributes, inv *invocation, sent, patch []byte) (bool, error) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return false, err
	}
	patched, err := p.Apply(sent)
	if err != nil {
		return false, err
	}
	var next runtime.Object
	if _, ok := inv.object.(*unstructured.Unstructured); ok {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(patched, &u.Object); err != nil {
			return false, err
		}
		next = u
	} else {
		next = reflect.New(reflect.TypeOf(inv.object).Elem()).Interface().(runtime.Object)
		if err := json.Unmarshal(patched, next); err != nil {
			return false, err
		}
	}
	if inv.convertBack != nil {
		if next, err = inv.convertBack(ctx, next); err != nil {
			return false, fmt.Errorf("convert back to %v: %w", a.GetKind(), err)
		}
	}
	obj := a.GetObject()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		n, ok := next.(*unstructured.Unstructured)
		if !ok {
			return false, fmt.Errorf("patched %T is not a custom resource", next)
		}
		changed := !reflect.DeepEqual(u.Object, n.Object)
		u.Object = n.Object
		return changed, nil
	}
	if reflect.TypeOf(next) != reflect.TypeOf(obj) {
		return false, fmt.Errorf("patched %T is not %T", next, obj)
	}
	// The request's own kind fields stay as they were.
	next.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	changed := !reflect.DeepEqual(obj, next)
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(next).Elem())
	return changed, nil
}

func convertJSON(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// withDeadline tells the webhook how long it has, as upstream's
// dispatchers: the time left to the call's deadline, rounded up to whole
// seconds, as the request's "timeout" parameter (without it the client's
// own 30 s would be sent).
func withDeadline(ctx context.Context, r *rest.Request) *rest.Request {
	deadline, ok := ctx.Deadline()
	if !ok {
		return r
	}
	timeout := time.Until(deadline)
	if timeout <= 0 {
		return r
	}
	if truncated := timeout.Truncate(time.Second); truncated != timeout {
		timeout = truncated + time.Second
	}
	return r.Timeout(timeout)
}
