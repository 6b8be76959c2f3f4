package policy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	admissionauthorizer "k8s.io/apiserver/pkg/admission/plugin/authorizer"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/kite-project/kite/registry"
)

// mutator is one version of a MutatingAdmissionPolicy, compiled: one
// patcher per mutation (upstream's ApplyConfiguration and JSONPatch
// patchers).
type mutator struct {
	err      error
	compiler *plugincel.CompositedCompiler
	matcher  matchconditions.Matcher
	patchers []patch.Patcher
}

func compileMutator(pol *admissionregistrationv1.MutatingAdmissionPolicy) *mutator {
	opts := plugincel.OptionalVariableDeclarations{HasParams: pol.Spec.ParamKind != nil, HasAuthorizer: true}
	c, err := newCompiler(pol.Spec.Variables, opts)
	if err != nil {
		return &mutator{err: err}
	}
	m := &mutator{compiler: c, matcher: newMatcher(c, pol.Spec.MatchConditions, opts, pol.Spec.FailurePolicy, pol.Name)}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	for _, mu := range pol.Spec.Mutations {
		switch {
		case mu.PatchType == admissionregistrationv1.PatchTypeJSONPatch && mu.JSONPatch != nil:
			m.patchers = append(m.patchers, patch.NewJSONPatcher(c.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: mu.JSONPatch.Expression}, patchOpts, environment.StoredExpressions)))
		case mu.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && mu.ApplyConfiguration != nil:
			m.patchers = append(m.patchers, patch.NewApplyConfigurationPatcher(c.CompileMutatingEvaluator(&patch.ApplyConfigurationCondition{Expression: mu.ApplyConfiguration.Expression}, patchOpts, environment.StoredExpressions)))
		}
	}
	return m
}

// policyError is upstream's generic PolicyError: a mutating policy that
// could not be applied.
type policyError struct {
	policy, binding string
	failurePolicy   *admissionregistrationv1.FailurePolicyType
	err             error
	reason          metav1.StatusReason
}

func (e policyError) Error() string {
	if e.binding != "" {
		return fmt.Sprintf("policy '%s' with binding '%s' denied request: %s", e.policy, e.binding, e.err.Error())
	}
	return fmt.Sprintf("policy %q denied request: %s", e.policy, e.err.Error())
}

// invocation is one policy, binding and parameter that apply to a
// request.
type invocation struct {
	policy  *admissionregistrationv1.MutatingAdmissionPolicy
	binding *admissionregistrationv1.MutatingAdmissionPolicyBinding
	target  *target
	param   runtime.Object
	mutator *mutator
}

// key names an invocation for reinvocation, as upstream's.
func (inv invocation) key() string {
	k := inv.policy.Name + "/" + inv.binding.Name
	if inv.param != nil {
		if m, err := meta.Accessor(inv.param); err == nil {
			k += "/" + m.GetNamespace() + "/" + m.GetName()
		}
	}
	return k
}

// admit is the MutatingAdmissionPolicy plugin: upstream's generic policy
// dispatcher with the mutating one's invocations.
func (p *Policies) admit(ctx context.Context, a admission.Attributes) error {
	if exempt(a) {
		return nil
	}
	hooks, err := p.mutatingHooks(ctx)
	if err != nil || len(hooks) == 0 {
		return err
	}
	var errs []policyError
	var invocations []invocation
	memo := &nsMemo{}
	for _, h := range hooks {
		pol := h.policy
		configError := func(err error, binding string) {
			wrapped := fmt.Errorf("failed to configure policy: %w", err)
			if binding != "" {
				wrapped = fmt.Errorf("failed to configure binding: %w", err)
			}
			errs = append(errs, policyError{policy: pol.Name, binding: binding, failurePolicy: pol.Spec.FailurePolicy, err: wrapped})
		}
		if pol.Spec.MatchConstraints == nil {
			configError(errors.New("policy contained no match constraints, a required field"), "")
			continue
		}
		ok, t, err := p.matches(ctx, a, pol.Spec.MatchConstraints, memo)
		if err != nil {
			configError(err, "")
			continue
		}
		if !ok {
			continue
		}
		src, err := p.paramSourceFor(pol.Spec.ParamKind)
		if err != nil {
			configError(err, "")
			continue
		}
		m := cached(p, p.mutators, pol, func() *mutator { return compileMutator(pol) })
		for _, b := range h.bindings {
			if mr := b.Spec.MatchResources; mr != nil {
				ok, _, err := p.matches(ctx, a, mr, memo)
				if err != nil {
					configError(err, b.Name)
					continue
				}
				if !ok {
					continue
				}
			}
			ps, err := params(ctx, src, b.Spec.ParamRef, a.GetNamespace())
			if err != nil {
				configError(err, b.Name)
				continue
			}
			for _, param := range ps {
				invocations = append(invocations, invocation{policy: pol, binding: b, target: t, param: param, mutator: m})
			}
		}
	}
	if len(invocations) > 0 {
		ns, err := p.namespaceObject(ctx, a, memo)
		if err != nil {
			return err
		}
		authz := admissionauthorizer.NewCachingAuthorizer(p.authorizer())
		// reinvocationPolicy IfNeeded as upstream's: an invocation run
		// before a later one (or, on the chain's second pass, a
		// webhook) changed the object runs once more on the second pass.
		r := registry.BeginReinvocations(a, mutatingPluginName)
		defer r.End()
		// Upstream keeps one set of versioned attributes per kind for the
		// pass, marked dirty by any patch applied to it, and looks at the
		// last invoked one's at the end: a patch there, even one that
		// changed nothing, forces the second pass (Patched).
		patchedKinds := map[schema.GroupVersionKind]bool{}
		var lastKind *schema.GroupVersionKind
		for _, inv := range invocations {
			if r.Skip(inv.key()) {
				continue
			}
			res, perr, err := p.invoke(ctx, a, inv, ns, authz)
			if err != nil {
				return err
			}
			errs = append(errs, perr...)
			if res.called {
				lastKind = &inv.target.kind
				patchedKinds[inv.target.kind] = patchedKinds[inv.target.kind] || res.patched
				r.Called(inv.key(), res.changed, inv.policy.Spec.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy)
			}
		}
		if lastKind != nil && patchedKinds[*lastKind] {
			r.Patched()
		}
	}
	return policyErrors(a, errs)
}

// invoked is what one invocation did: whether it ran at all (its
// matchConditions matched and there was an object), applied a patch
// (whatever the patch did) and changed the object.
type invoked struct {
	called, patched, changed bool
}

// invoke applies one invocation's mutations to the request's object and
// says what they did. A status error ends the request; other errors are
// the policy's, weighed by its failurePolicy.
func (p *Policies) invoke(ctx context.Context, a admission.Attributes, inv invocation, ns *corev1.Namespace, authz authorizer.UnconditionalAuthorizer) (invoked, []policyError, error) {
	fail := func(err error) []policyError {
		return []policyError{{policy: inv.policy.Name, binding: inv.binding.Name, failurePolicy: inv.policy.Spec.FailurePolicy, err: err, reason: metav1.StatusReasonInvalid}}
	}
	if inv.mutator.err != nil {
		return invoked{}, fail(inv.mutator.err), nil
	}
	if len(inv.mutator.patchers) != len(inv.policy.Spec.Mutations) {
		return invoked{}, nil, apierrors.NewInternalError(fmt.Errorf("expected %v compiled evaluators for policy %v, got %v", len(inv.policy.Spec.Mutations), inv.policy.Name, len(inv.mutator.patchers)))
	}
	if isNil(a.GetObject()) {
		return invoked{}, nil, nil // nothing to mutate (a deletion)
	}
	va, err := versioned(ctx, a, inv.target, false)
	if err != nil {
		return invoked{}, nil, apierrors.NewInternalError(err)
	}
	// Variables are composed once per invocation, as upstream's.
	ctx = inv.mutator.compiler.CreateContext(ctx)
	if inv.mutator.matcher != nil {
		res := inv.mutator.matcher.Match(ctx, va, inv.param, authz)
		if res.Error != nil {
			return invoked{}, fail(res.Error), nil
		}
		if !res.Matches {
			return invoked{}, nil, nil
		}
	}
	var errs []policyError
	for _, patcher := range inv.mutator.patchers {
		start := time.Now()
		err := p.patch(ctx, patcher, va, inv, ns, authz)
		p.metrics.observeMutation(inv.policy.Name, inv.binding.Name, err, time.Since(start))
		if err != nil {
			var status *apierrors.StatusError
			if errors.As(err, &status) {
				return invoked{called: true, patched: va.Dirty}, nil, status
			}
			errs = append(errs, fail(err)...)
		}
	}
	if !va.Dirty {
		return invoked{called: true}, errs, nil
	}
	next := va.VersionedObject.Object()
	if inv.target.convertBack != nil {
		if next, err = inv.target.convertBack(ctx, next); err != nil {
			return invoked{called: true, patched: true}, nil, apierrors.NewInternalError(fmt.Errorf("failed to convert object: %w", err))
		}
	}
	changed, err := replace(a.GetObject(), next)
	if err != nil {
		return invoked{called: true, patched: true}, nil, apierrors.NewInternalError(fmt.Errorf("failed to convert object: %w", err))
	}
	return invoked{called: true, patched: true, changed: changed}, errs, nil
}

// patch runs one patcher over the versioned object (upstream's
// dispatchOne).
func (p *Policies) patch(ctx context.Context, patcher patch.Patcher, va *admission.VersionedAttributes, inv invocation, ns *corev1.Namespace, authz authorizer.UnconditionalAuthorizer) error {
	var tc = p.typeConverter(va)
	if tc == nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("Resource kind %s not found. There can be a delay between when CustomResourceDefinitions are created and when they are available.", va.VersionedKind))
	}
	next, err := patcher.Patch(ctx, patch.Request{
		MatchedResource:     inv.target.resource,
		VersionedAttributes: va,
		ObjectInterfaces:    p.oi,
		OptionalVariables:   plugincel.OptionalVariableBindings{VersionedParams: inv.param, Authorizer: authz},
		Namespace:           ns,
		TypeConverter:       tc,
	}, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return err
	}
	if _, ok := va.VersionedObject.Object().(*unstructured.Unstructured); !ok {
		// An ApplyConfiguration's result is unstructured: back to the Go type.
		if next, err = p.oi.GetObjectConvertor().ConvertToVersion(next, va.VersionedKind.GroupVersion()); err != nil {
			return err
		}
	}
	next.GetObjectKind().SetGroupVersionKind(va.VersionedKind)
	p.oi.GetObjectDefaulter().Default(next)
	va.UpdateObject(next)
	return nil
}

func (p *Policies) typeConverter(va *admission.VersionedAttributes) managedfields.TypeConverter {
	if p.opts.TypeConverter == nil {
		return nil
	}
	return p.opts.TypeConverter(va.VersionedKind)
}

// replace puts next in place of obj (of the same kind), keeping obj's
// own apiVersion and kind, and says whether anything changed.
func replace(obj, next runtime.Object) (bool, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		n, ok := next.(*unstructured.Unstructured)
		if !ok {
			return false, fmt.Errorf("mutated %T is not a custom resource", next)
		}
		gvk := u.GroupVersionKind()
		changed := !apiequality.Semantic.DeepEqual(u.Object, n.Object)
		u.Object = n.Object
		u.SetGroupVersionKind(gvk)
		return changed, nil
	}
	if reflect.TypeOf(next) != reflect.TypeOf(obj) {
		return false, fmt.Errorf("mutated %T is not %T", next, obj)
	}
	next.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	changed := !apiequality.Semantic.DeepEqual(obj, next)
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(next).Elem())
	return changed, nil
}

// policyErrors is upstream's end of the generic dispatcher: the errors
// of policies whose failurePolicy is Fail refuse the request (403, the
// first error's message and reason).
func policyErrors(a admission.Attributes, errs []policyError) error {
	var failing []policyError
	for _, e := range errs {
		if e.failurePolicy != nil && *e.failurePolicy == admissionregistrationv1.Ignore {
			continue
		}
		failing = append(failing, e)
	}
	if len(failing) == 0 {
		return nil
	}
	var serr *apierrors.StatusError
	if !errors.As(admission.NewForbidden(a, errors.New("admission request denied by policy")), &serr) {
		return apierrors.NewInternalError(errors.New("failed to create status error"))
	}
	serr.ErrStatus.Message = failing[0].Error()
	if failing[0].reason != "" {
		serr.ErrStatus.Reason = failing[0].reason
	}
	if serr.ErrStatus.Details == nil {
		serr.ErrStatus.Details = &metav1.StatusDetails{}
	}
	for _, e := range failing {
		serr.ErrStatus.Details.Causes = append(serr.ErrStatus.Details.Causes, metav1.StatusCause{Message: e.Error()})
	}
	return serr
}

// mutatingHooks lists the MutatingAdmissionPolicies that bindings name,
// with their bindings.
func (p *Policies) mutatingHooks(ctx context.Context) ([]bound[*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding], error) {
	return loadHooks(ctx, p, &p.mhooks, mutatingPolicies, mutatingBindings,
		func(l runtime.Object) []*admissionregistrationv1.MutatingAdmissionPolicy {
			return ptrs(l.(*admissionregistrationv1.MutatingAdmissionPolicyList).Items)
		},
		func(l runtime.Object) []*admissionregistrationv1.MutatingAdmissionPolicyBinding {
			return ptrs(l.(*admissionregistrationv1.MutatingAdmissionPolicyBindingList).Items)
		},
		func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) string { return b.Spec.PolicyName })
}
