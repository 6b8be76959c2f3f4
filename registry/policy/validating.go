package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	admissionauthorizer "k8s.io/apiserver/pkg/admission/plugin/authorizer"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/warning"
)

// The CEL expressions of a policy, as the compiler takes them.
type (
	validationExpr struct {
		v admissionregistrationv1.Validation
	}
	messageExpr struct{ expr string }
	auditExpr   struct {
		a admissionregistrationv1.AuditAnnotation
	}
	variableExpr struct {
		v admissionregistrationv1.Variable
	}
)

func (e *validationExpr) GetExpression() string    { return e.v.Expression }
func (e *validationExpr) ReturnTypes() []*cel.Type { return []*cel.Type{cel.BoolType} }
func (e *messageExpr) GetExpression() string       { return e.expr }
func (e *messageExpr) ReturnTypes() []*cel.Type    { return []*cel.Type{cel.StringType} }
func (e *auditExpr) GetExpression() string         { return e.a.ValueExpression }
func (e *auditExpr) ReturnTypes() []*cel.Type      { return []*cel.Type{cel.StringType, cel.NullType} }
func (e *variableExpr) GetExpression() string      { return e.v.Expression }
func (e *variableExpr) ReturnTypes() []*cel.Type   { return []*cel.Type{cel.AnyType, cel.DynType} }
func (e *variableExpr) GetName() string            { return e.v.Name }

// newCompiler returns a compiler that knows a policy's variables, in
// upstream's base environment.
func newCompiler(vars []admissionregistrationv1.Variable, opts plugincel.OptionalVariableDeclarations) (*plugincel.CompositedCompiler, error) {
	return newCapturingCompiler(vars, opts, nil)
}

// newCapturingCompiler is newCompiler whose programs, when capture is
// not nil, record the environment they are built in (see untracked).
func newCapturingCompiler(vars []admissionregistrationv1.Variable, opts plugincel.OptionalVariableDeclarations, capture *envCapture) (*plugincel.CompositedCompiler, error) {
	base := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	if capture != nil {
		extended, err := base.Extend(environment.VersionedOptions{IntroducedVersion: version.MajorMinor(1, 0), ProgramOptions: []cel.ProgramOption{capture.option()}})
		if err != nil {
			return nil, &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: fmt.Sprintf("failed to initialize CEL compiler: %v", err)}
		}
		base = extended
	}
	c, err := plugincel.NewCompositedCompiler(base)
	if err != nil {
		return nil, &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: fmt.Sprintf("failed to initialize CEL compiler: %v", err)}
	}
	named := make([]plugincel.NamedExpressionAccessor, len(vars))
	for i := range vars {
		named[i] = &variableExpr{vars[i]}
	}
	c.CompileAndStoreVariables(named, opts, environment.StoredExpressions)
	return c, nil
}

// newMatcher compiles matchConditions (nil when there are none).
func newMatcher(c *plugincel.CompositedCompiler, conds []admissionregistrationv1.MatchCondition, opts plugincel.OptionalVariableDeclarations, fp *admissionregistrationv1.FailurePolicyType, name string) matchconditions.Matcher {
	if len(conds) == 0 {
		return nil
	}
	accessors := make([]plugincel.ExpressionAccessor, len(conds))
	for i := range conds {
		accessors[i] = (*matchconditions.MatchCondition)(&conds[i])
	}
	return matchconditions.NewMatcher(c.CompileCondition(accessors, opts, environment.StoredExpressions), fp, "policy", "validate", name)
}

// validator is one version of a ValidatingAdmissionPolicy, compiled.
type validator struct {
	err           error
	failurePolicy admissionregistrationv1.FailurePolicyType
	matcher       matchconditions.Matcher
	// compiler is the policy's, with its variables: each expression set
	// evaluated makes its composition context from it.
	compiler *plugincel.CompositedCompiler
	// validations and messages are evaluated on lazily built inputs
	// (inputs.evaluate); messages has a placeholder where a validation has
	// no messageExpression.
	validations, messages []plugincel.CompilationResult
	auditions             plugincel.ConditionEvaluator
	// hasMessages and hasAudits say whether there is any
	// messageExpression or auditAnnotation: without them their
	// evaluation (a CEL activation of its own per request) is skipped,
	// which gives what upstream's evaluation of nothing gives.
	hasMessages, hasAudits bool
	// untracked are the validations and messages without cost tracking,
	// for requests where the estimate proves tracking cannot change the
	// outcome (nil when the policy is not eligible).
	untracked *untracked
}

func compileValidator(pol *admissionregistrationv1.ValidatingAdmissionPolicy) *validator {
	v := &validator{failurePolicy: admissionregistrationv1.Fail}
	if pol.Spec.FailurePolicy != nil {
		v.failurePolicy = *pol.Spec.FailurePolicy
	}
	opts := plugincel.OptionalVariableDeclarations{HasParams: pol.Spec.ParamKind != nil, HasAuthorizer: true}
	// messageExpressions see no authorizer, as upstream's.
	msgOpts := plugincel.OptionalVariableDeclarations{HasParams: pol.Spec.ParamKind != nil}
	// Only a policy without variables may be evaluated untracked: the
	// variables' costs are the composition's, outside the estimate.
	var capture *envCapture
	if len(pol.Spec.Variables) == 0 {
		capture = &envCapture{}
	}
	c, err := newCapturingCompiler(pol.Spec.Variables, opts, capture)
	if err != nil {
		v.err = err
		return v
	}
	v.matcher = newMatcher(c, pol.Spec.MatchConditions, opts, pol.Spec.FailurePolicy, pol.Name)
	validations := make([]plugincel.ExpressionAccessor, len(pol.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(pol.Spec.Validations))
	for i, val := range pol.Spec.Validations {
		validations[i] = &validationExpr{val}
		if val.MessageExpression != "" {
			messages[i] = &messageExpr{val.MessageExpression}
			v.hasMessages = true
		}
	}
	audits := make([]plugincel.ExpressionAccessor, len(pol.Spec.AuditAnnotations))
	for i := range pol.Spec.AuditAnnotations {
		audits[i] = &auditExpr{pol.Spec.AuditAnnotations[i]}
	}
	v.compiler = c
	if capture != nil {
		capture.env.Store(nil)
	}
	v.validations = compileAll(c, validations, opts)
	if capture != nil {
		validationEnv := capture.env.Swap(nil)
		v.messages = compileAll(c, messages, msgOpts)
		v.untracked = compileUntracked(validationEnv, capture.env.Load(), v.validations, v.messages)
	} else {
		v.messages = compileAll(c, messages, msgOpts)
	}
	v.auditions = c.CompileCondition(audits, opts, environment.StoredExpressions)
	v.hasAudits = len(audits) > 0
	return v
}

// decision is the outcome of one validation (upstream's PolicyDecision).
type decision struct {
	deny bool
	// evalError: the validation could not be evaluated (a denial only
	// under failurePolicy Fail).
	evalError bool
	message   string
	reason    metav1.StatusReason
	// elapsed is the validation's evaluation time (for the metrics).
	elapsed time.Duration
}

// auditResult is one auditAnnotation's outcome: a value to publish, an
// error (under failurePolicy Fail) or nothing.
type auditResult struct {
	key, value, err string
	elapsed         time.Duration
}

// onError is the decision on an evaluation error: a denial under
// failurePolicy Fail, nothing under Ignore.
func (v *validator) onError(msg string) decision {
	return decision{deny: v.failurePolicy != admissionregistrationv1.Ignore, evalError: true, message: msg}
}

// evaluate is upstream's validator.Validate for one binding and one
// parameter.
func (v *validator) evaluate(ctx context.Context, t *target, va *admission.VersionedAttributes, param runtime.Object, ns *corev1.Namespace, authz authorizer.UnconditionalAuthorizer) ([]decision, []auditResult) {
	if v.err != nil {
		return []decision{v.onError(v.err.Error())}, nil
	}
	if v.matcher != nil {
		res := v.matcher.Match(ctx, va, param, authz)
		if res.Error != nil {
			return []decision{v.onError(res.Error.Error())}, nil
		}
		if !res.Matches {
			return nil, nil
		}
	}
	// The validations see the authorizer, the messageExpressions do not
	// (upstream's optionalVars and expressionOptionalVars).
	in := newInputs(va, t, param, ns, authz)
	var results, msgResults []plugincel.EvaluationResult
	var msgErr error
	if u := v.untracked; u != nil && u.usable(va.VersionedObject.Object(), va.VersionedOldObject.Object(), param, ns) {
		// Neither the per-call limit nor the budget can be reached, and
		// the budget left is observable only through them: the same
		// results as the tracked evaluation below.
		var err error
		if results, err = in.evaluateUntracked(ctx, v.validations, u.validations, u.validationLoops, true); err != nil {
			return []decision{v.onError(err.Error())}, nil
		}
		if v.hasMessages {
			msgResults, msgErr = in.evaluateUntracked(ctx, v.messages, u.messages, u.messageLoops, false)
		}
	} else {
		var remaining int64
		var err error
		results, remaining, err = in.evaluate(ctx, v.compiler, v.validations, true, celconfig.RuntimeCELCostBudget)
		if err != nil {
			return []decision{v.onError(err.Error())}, nil
		}
		if v.hasMessages {
			msgResults, _, msgErr = in.evaluate(ctx, v.compiler, v.messages, false, remaining)
		}
	}
	decisions := make([]decision, len(results))
	for i, r := range results {
		val, ok := r.ExpressionAccessor.(*validationExpr)
		switch {
		case !ok:
			decisions[i] = v.onError("Invalid type sent to validator, expected ValidationCondition")
		case r.Error != nil:
			decisions[i] = v.onError(r.Error.Error())
		case errors.Is(msgErr, apiservercel.ErrInternal) || errors.Is(msgErr, apiservercel.ErrOutOfBudget):
			decisions[i] = v.onError(fmt.Sprintf("failed messageExpression: %s", msgErr))
		case r.EvalResult != celtypes.True:
			var msg *plugincel.EvaluationResult
			if i < len(msgResults) {
				msg = &msgResults[i]
			}
			decisions[i] = denial(val.v, msg)
		}
		decisions[i].elapsed = r.Elapsed
	}
	if !v.hasAudits {
		return decisions, nil
	}
	// As upstream's: the audit annotations see the namespace itself, not
	// the copy the validations see.
	req := plugincel.CreateAdmissionRequest(va.Attributes, metav1.GroupVersionResource(t.resource), metav1.GroupVersionKind(va.VersionedKind))
	auditResults, _, err := v.auditions.ForInput(ctx, va, req, plugincel.OptionalVariableBindings{VersionedParams: param}, ns, celconfig.RuntimeCELCostBudget)
	if err != nil {
		return []decision{v.onError(err.Error())}, nil
	}
	var audits []auditResult
	for _, r := range auditResults {
		ae, ok := r.ExpressionAccessor.(*auditExpr)
		if !ok {
			continue
		}
		res := auditResult{key: ae.a.Key, elapsed: r.Elapsed}
		switch {
		case r.Error != nil:
			if v.failurePolicy == admissionregistrationv1.Ignore {
				continue
			}
			res.err = r.Error.Error()
		case r.EvalResult.Type() == celtypes.StringType:
			res.value = strings.TrimSpace(r.EvalResult.Value().(string))
			if res.value == "" {
				continue
			}
		case r.EvalResult.Type() == celtypes.NullType:
			continue
		default:
			res.err = fmt.Sprintf("valueExpression '%v' resulted in unsupported return type: %v. Return type must be either string or null.", ae.a.ValueExpression, r.EvalResult.Type())
		}
		audits = append(audits, res)
	}
	return decisions, audits
}

// denial is a failed validation's decision: its reason (Invalid by
// default) and message — the messageExpression's result when it gave a
// usable one (a single line within upstream's limit), else message, else
// upstream's "failed expression: ...".
func denial(val admissionregistrationv1.Validation, msg *plugincel.EvaluationResult) decision {
	d := decision{deny: true, reason: metav1.StatusReasonInvalid}
	if val.Reason != nil {
		d.reason = *val.Reason
	}
	if msg != nil && msg.Error == nil && msg.EvalResult != nil {
		if s, ok := msg.EvalResult.Value().(string); ok {
			s = strings.TrimSpace(s)
			if len(s) <= celconfig.MaxEvaluatedMessageExpressionSizeBytes && !strings.Contains(s, "\n") {
				d.message = s
			}
		}
	}
	if d.message == "" {
		d.message = strings.TrimSpace(val.Message)
	}
	if d.message == "" {
		d.message = fmt.Sprintf("failed expression: %v", strings.TrimSpace(val.Expression))
	}
	return d
}

// validationFailure is one entry of the
// validation.policy.admission.k8s.io/validation_failure audit annotation.
type validationFailure struct {
	Message           string                                     `json:"message"`
	Policy            string                                     `json:"policy"`
	Binding           string                                     `json:"binding"`
	ExpressionIndex   int                                        `json:"expressionIndex"`
	ValidationActions []admissionregistrationv1.ValidationAction `json:"validationActions"`
}

// maxAuditAnnotationValueLength is upstream's cap on an annotation value.
const maxAuditAnnotationValueLength = 10 * 1024

// validate is the ValidatingAdmissionPolicy plugin: upstream's
// validating dispatcher over the policies and bindings of the stores.
func (p *Policies) validate(ctx context.Context, a admission.Attributes) error {
	if exempt(a) {
		return nil
	}
	hooks, err := p.validatingHooks(ctx)
	if err != nil || len(hooks) == 0 {
		return err
	}
	type denied struct {
		decision
		policy, binding string
	}
	var denials []denied
	var failures []validationFailure
	authz := admissionauthorizer.NewCachingAuthorizer(p.authorizer())
	memo := &nsMemo{}
	for _, h := range hooks {
		pol := h.policy
		configError := func(err error, binding string) {
			fp := admissionregistrationv1.Fail
			if pol.Spec.FailurePolicy != nil {
				fp = *pol.Spec.FailurePolicy
			}
			if fp == admissionregistrationv1.Ignore {
				return
			}
			msg := fmt.Errorf("failed to configure policy: %w", err).Error()
			if binding != "" {
				msg = fmt.Errorf("failed to configure binding: %w", err).Error()
			}
			denials = append(denials, denied{decision: decision{deny: true, message: msg}, policy: pol.Name, binding: binding})
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
		v := cached(p, p.validators, pol, func() *validator { return compileValidator(pol) })
		var annotations map[string][]string // made by the first audit annotation
		var annotationKeys []string
		var va *admission.VersionedAttributes
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
			if len(ps) == 0 {
				continue
			}
			if va == nil {
				if va, err = versioned(ctx, a, t, true); err != nil {
					configError(err, b.Name)
					continue
				}
			}
			ns, err := p.namespaceObject(ctx, a, memo)
			if err != nil {
				return err
			}
			for _, param := range ps {
				decisions, audits := v.evaluate(ctx, t, va, param, ns, authz)
				for i, d := range decisions {
					if !d.deny {
						if d.evalError {
							p.metrics.observe(pol.Name, b.Name, actionAllow, d)
						}
						continue
					}
					for _, action := range b.Spec.ValidationActions {
						switch action {
						case admissionregistrationv1.Deny:
							denials = append(denials, denied{decision: d, policy: pol.Name, binding: b.Name})
							p.metrics.observe(pol.Name, b.Name, actionDeny, d)
						case admissionregistrationv1.Warn:
							warning.AddWarning(ctx, "", fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", pol.Name, b.Name, d.message))
							p.metrics.observe(pol.Name, b.Name, actionWarn, d)
						case admissionregistrationv1.Audit:
							failures = append(failures, validationFailure{Message: d.message, Policy: pol.Name, Binding: b.Name, ExpressionIndex: i, ValidationActions: b.Spec.ValidationActions})
							p.metrics.observe(pol.Name, b.Name, actionAudit, d)
						}
					}
				}
				for _, au := range audits {
					if au.err != "" {
						d := decision{deny: true, evalError: true, message: au.err, elapsed: au.elapsed}
						denials = append(denials, denied{decision: d, policy: pol.Name, binding: b.Name})
						p.metrics.observe(pol.Name, b.Name, actionDeny, d)
						continue
					}
					value := au.value
					if len(value) > maxAuditAnnotationValueLength {
						value = value[:maxAuditAnnotationValueLength]
					}
					if annotations == nil {
						annotations = map[string][]string{}
					}
					if _, seen := annotations[au.key]; !seen {
						annotationKeys = append(annotationKeys, au.key)
					}
					if !containsString(annotations[au.key], value) {
						annotations[au.key] = append(annotations[au.key], value)
					}
				}
			}
		}
		for _, k := range annotationKeys {
			_ = a.AddAnnotation(pol.Name+"/"+k, strings.Join(annotations[k], ", "))
		}
	}
	if len(failures) > 0 {
		if len(failures) > 50 {
			failures = failures[:50]
		}
		if b, err := json.Marshal(failures); err == nil {
			_ = a.AddAnnotation("validation.policy.admission.k8s.io/validation_failure", string(b))
		}
	}
	if len(denials) == 0 {
		return nil
	}
	d := denials[0]
	msg := fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", d.policy, d.message)
	if d.binding != "" {
		msg = fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", d.policy, d.binding, d.message)
	}
	return denialError(a, msg, d.reason)
}

// denialError is upstream's refusal: the admission Forbidden error with
// the denial's reason (Invalid by default) and its code.
func denialError(a admission.Attributes, msg string, reason metav1.StatusReason) error {
	var serr *apierrors.StatusError
	if !errors.As(admission.NewForbidden(a, errors.New(msg)), &serr) {
		return apierrors.NewInternalError(errors.New(msg))
	}
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	serr.ErrStatus.Reason = reason
	serr.ErrStatus.Code = reasonToCode(reason)
	if serr.ErrStatus.Details == nil {
		serr.ErrStatus.Details = &metav1.StatusDetails{}
	}
	serr.ErrStatus.Details.Causes = append(serr.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	return serr
}

// reasonToCode is upstream's: the reasons a validation may name.
func reasonToCode(r metav1.StatusReason) int32 {
	switch r {
	case metav1.StatusReasonForbidden:
		return http.StatusForbidden
	case metav1.StatusReasonUnauthorized:
		return http.StatusUnauthorized
	case metav1.StatusReasonRequestEntityTooLarge:
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusUnprocessableEntity
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validatingHooks lists the ValidatingAdmissionPolicies that bindings
// name, with their bindings.
func (p *Policies) validatingHooks(ctx context.Context) ([]bound[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding], error) {
	return loadHooks(ctx, p, &p.vhooks, validatingPolicies, validatingBindings,
		func(l runtime.Object) []*admissionregistrationv1.ValidatingAdmissionPolicy {
			return ptrs(l.(*admissionregistrationv1.ValidatingAdmissionPolicyList).Items)
		},
		func(l runtime.Object) []*admissionregistrationv1.ValidatingAdmissionPolicyBinding {
			return ptrs(l.(*admissionregistrationv1.ValidatingAdmissionPolicyBindingList).Items)
		},
		func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) string { return b.Spec.PolicyName })
}
