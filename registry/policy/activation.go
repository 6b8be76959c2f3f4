package policy

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
)

// inputs are the values a policy's expressions may read for one request,
// binding and parameter, each built the first time an expression names
// it and then shared by every expression set evaluated on them (the
// validations and the messageExpressions). Upstream's ForInput builds
// all of them for every expression set before evaluating anything: the
// admission request (CreateAdmissionRequest: the user's info copied, a
// request object wrapped for CEL), a copy of the namespace, the two
// authorizer values, the variables' lazy map. An expression that never
// names them cannot tell whether they were built, so building them only
// when named gives the same results; it spares what the usual policy,
// which reads only object (and oldObject), never looks at.
//
// Not safe for concurrent use: one request's evaluation runs its
// expressions one after the other (as cel-go's lazy values require).
type inputs struct {
	va    *admission.VersionedAttributes
	t     *target
	param runtime.Object
	ns    *corev1.Namespace
	authz authorizer.UnconditionalAuthorizer

	// built says which of the values below have been built (bit per
	// variable, builtObject...).
	built                     uint8
	object, oldObject         ref.Val
	params                    any
	request, namespace        ref.Val
	authorizer, resourceAuthz ref.Val
}

// Bits of inputs.built, one per lazily built variable.
const (
	builtObject uint8 = 1 << iota
	builtOldObject
	builtParams
	builtRequest
	builtNamespace
	builtAuthorizer
	builtResourceAuthorizer
)

func newInputs(va *admission.VersionedAttributes, t *target, param runtime.Object, ns *corev1.Namespace, authz authorizer.UnconditionalAuthorizer) *inputs {
	// As upstream's newActivation: the objects are seen through the
	// schemaless reflection over the typed object, not an unstructured
	// copy.
	//nolint:staticcheck // upstream's own (deprecated, temporary) switch.
	va.VersionedObject.UseSchemalessTypeRef = true
	//nolint:staticcheck
	va.VersionedOldObject.UseSchemalessTypeRef = true
	return &inputs{va: va, t: t, param: param, ns: ns, authz: authz}
}

// prepare builds the object and oldObject values before any expression
// runs, as upstream does, so that an object that cannot be shown to CEL
// fails the whole expression set with upstream's error. (Both are cached
// in the versioned attributes: one reflection wrapper per request.)
func (in *inputs) prepare() error {
	if in.built&builtOldObject == 0 {
		v, err := in.va.VersionedOldObject.CELValue()
		if err != nil {
			return fmt.Errorf("failed to prepare oldObject variable for evaluation: %w", err)
		}
		in.oldObject, in.built = v, in.built|builtOldObject
	}
	if in.built&builtObject == 0 {
		v, err := in.va.VersionedObject.CELValue()
		if err != nil {
			return fmt.Errorf("failed to prepare object variable for evaluation: %w", err)
		}
		in.object, in.built = v, in.built|builtObject
	}
	return nil
}

// resolve returns a variable's value as upstream's evaluationActivation
// does (withAuthz: the expression set was given the authorizer; the
// messageExpressions are not), building it on first use.
func (in *inputs) resolve(name string, withAuthz bool) (any, bool) {
	switch name {
	case plugincel.ObjectVarName:
		return in.object, true
	case plugincel.OldObjectVarName:
		return in.oldObject, true
	case plugincel.ParamsVarName:
		if in.built&builtParams == 0 {
			if in.param != nil {
				in.params = common.SchemalessTypedToVal(in.param)
			}
			in.built |= builtParams
		}
		return in.params, true // params may be null
	case plugincel.RequestVarName:
		if in.built&builtRequest == 0 {
			req := plugincel.CreateAdmissionRequest(in.va.Attributes, metav1.GroupVersionResource(in.t.resource), metav1.GroupVersionKind(in.va.VersionedKind))
			in.request, in.built = common.SchemalessTypedToVal(req), in.built|builtRequest
		}
		return in.request, true
	case plugincel.NamespaceVarName:
		if in.built&builtNamespace == 0 {
			in.namespace, in.built = common.SchemalessTypedToVal(plugincel.CreateNamespaceObject(in.ns)), in.built|builtNamespace
		}
		return in.namespace, true
	case plugincel.AuthorizerVarName:
		if !withAuthz || in.authz == nil {
			return nil, false
		}
		if in.built&builtAuthorizer == 0 {
			in.authorizer, in.built = library.NewAuthorizerVal(in.va.GetUserInfo(), in.authz), in.built|builtAuthorizer
		}
		return in.authorizer, true
	case plugincel.RequestResourceAuthorizerVarName:
		if !withAuthz || in.authz == nil {
			return nil, false
		}
		if in.built&builtResourceAuthorizer == 0 {
			in.resourceAuthz, in.built = library.NewResourceAuthorizerVal(in.va.GetUserInfo(), in.authz, in.va), in.built|builtResourceAuthorizer
		}
		return in.resourceAuthz, true
	}
	return nil, false
}

// activation is one expression set's view of the inputs: upstream's
// evaluationActivation, with the variables' lazy map (each set has its
// own composition context, as upstream's ForInput makes one per call)
// built when first named too.
type activation struct {
	in        *inputs
	withAuthz bool
	comp      plugincel.CompositionContext
	variables ref.Val
}

var _ interpreter.Activation = (*activation)(nil)

func (a *activation) ResolveName(name string) (any, bool) {
	if name == plugincel.VariableVarName { // variables always present
		if a.comp == nil { // untracked sets never name variables
			return nil, false
		}
		if a.variables == nil {
			a.variables = a.comp.Variables(a)
		}
		return a.variables, true
	}
	return a.in.resolve(name, a.withAuthz)
}

func (a *activation) Parent() interpreter.Activation { return nil }

// evaluate is upstream's ForInput over compiled expressions (a nil
// accessor is a placeholder with an empty result), on the lazy inputs:
// the same results, costs, budget and errors.
func (in *inputs) evaluate(ctx context.Context, comp *plugincel.CompositedCompiler, compiled []plugincel.CompilationResult, withAuthz bool, budget int64) ([]plugincel.EvaluationResult, int64, error) {
	evaluations := make([]plugincel.EvaluationResult, len(compiled))
	if len(compiled) == 0 {
		return evaluations, budget, nil
	}
	if err := in.prepare(); err != nil {
		return nil, -1, err
	}
	cctx := comp.CreateContext(ctx)
	act := &activation{in: in, withAuthz: withAuthz, comp: cctx}
	var err error
	for i := range compiled {
		evaluations[i], budget, err = evaluateOne(cctx, act, &compiled[i], budget)
		if err != nil {
			return nil, -1, err
		}
	}
	return evaluations, budget, nil
}

// evaluateOne is upstream's evaluationActivation.Evaluate.
func evaluateOne(cctx plugincel.CompositionContext, act interpreter.Activation, r *plugincel.CompilationResult, budget int64) (plugincel.EvaluationResult, int64, error) {
	var evaluation plugincel.EvaluationResult
	if r.ExpressionAccessor == nil { // a placeholder
		return evaluation, budget, nil
	}
	evaluation.ExpressionAccessor = r.ExpressionAccessor
	if r.Error != nil {
		evaluation.Error = &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: fmt.Sprintf("compilation error: %v", r.Error), Cause: r.Error}
		return evaluation, budget, nil
	}
	if r.Program == nil {
		evaluation.Error = &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: "unexpected internal error compiling expression"}
		return evaluation, budget, nil
	}
	t1 := time.Now()
	evalResult, evalDetails, err := r.Program.ContextEval(cctx, act)
	// Budget may be spent by the lazy evaluation of composited variables.
	if compositionCost := cctx.GetAndResetCost(); compositionCost > budget {
		return evaluation, -1, &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: "validation failed due to running out of cost budget, no further validation rules will be run", Cause: apiservercel.ErrOutOfBudget}
	} else {
		budget -= compositionCost
	}
	evaluation.Elapsed = time.Since(t1)
	if evalDetails == nil {
		return evaluation, -1, &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: fmt.Sprintf("runtime cost could not be calculated for expression: %v, no further expression will be run", r.ExpressionAccessor.GetExpression())}
	}
	rtCost := evalDetails.ActualCost()
	if rtCost == nil {
		return evaluation, -1, &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: fmt.Sprintf("runtime cost could not be calculated for expression: %v, no further expression will be run", r.ExpressionAccessor.GetExpression()), Cause: apiservercel.ErrOutOfBudget}
	}
	if *rtCost > math.MaxInt64 || int64(*rtCost) > budget {
		return evaluation, -1, &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: "validation failed due to running out of cost budget, no further validation rules will be run", Cause: apiservercel.ErrOutOfBudget}
	}
	budget -= int64(*rtCost)
	if err != nil {
		evaluation.Error = &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: fmt.Sprintf("expression '%v' resulted in error: %v", r.ExpressionAccessor.GetExpression(), err)}
	} else {
		evaluation.EvalResult = evalResult
	}
	return evaluation, budget, nil
}

// evaluateUntracked is evaluate with the untracked programs of the same
// expressions (index-aligned with compiled), for a request whose cost
// bound proves that neither the per-call limit nor the budget can be
// reached (untracked.usable): then evaluate's cost checks never fire and
// the results, errors and messages are the same. (The budget left is not
// known; the caller has no use for it.) loops says which programs have a
// comprehension and so need the context: the others are evaluated
// without it, which is the same evaluation.
func (in *inputs) evaluateUntracked(ctx context.Context, compiled []plugincel.CompilationResult, progs []cel.Program, loops []bool, withAuthz bool) ([]plugincel.EvaluationResult, error) {
	evaluations := make([]plugincel.EvaluationResult, len(compiled))
	if len(compiled) == 0 {
		return evaluations, nil
	}
	if err := in.prepare(); err != nil {
		return nil, err
	}
	act := &activation{in: in, withAuthz: withAuthz}
	for i := range compiled {
		r, evaluation := &compiled[i], &evaluations[i]
		if r.ExpressionAccessor == nil { // a placeholder
			continue
		}
		evaluation.ExpressionAccessor = r.ExpressionAccessor
		t1 := time.Now()
		var evalResult ref.Val
		var err error
		if loops[i] {
			evalResult, _, err = progs[i].ContextEval(ctx, act)
		} else {
			evalResult, _, err = progs[i].Eval(act)
		}
		evaluation.Elapsed = time.Since(t1)
		if err != nil {
			evaluation.Error = &apiservercel.Error{Type: apiservercel.ErrorTypeInvalid, Detail: fmt.Sprintf("expression '%v' resulted in error: %v", r.ExpressionAccessor.GetExpression(), err)}
		} else {
			evaluation.EvalResult = evalResult
		}
	}
	return evaluations, nil
}

// compileAll is upstream's CompileCondition without the evaluator around
// the results: a nil accessor stays a placeholder.
func compileAll(c *plugincel.CompositedCompiler, accessors []plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations) []plugincel.CompilationResult {
	out := make([]plugincel.CompilationResult, len(accessors))
	for i, a := range accessors {
		if a == nil {
			continue
		}
		out[i] = c.CompileCELExpression(a, opts, environment.StoredExpressions)
	}
	return out
}
