package policy

import (
	"errors"
	"math/bits"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	celast "github.com/google/cel-go/common/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
)

// Evaluating without cost tracking.
//
// Upstream's programs track their runtime cost: every step of cel-go's
// interpreter goes through an observer, which is about half of what a
// simple validation costs to evaluate (BenchmarkEvaluateFiveValidations).
// The tracked cost decides only three things: the per-call limit (an
// expression past celconfig.PerCallLimit fails), the request budget (the
// expression set past celconfig.RuntimeCELCostBudget fails) and the
// budget left for the messageExpressions after the validations. When
// cel-go's static cost estimate of the whole set (validations and
// messageExpressions together) proves that no expression can pass the
// per-call limit and the set cannot pass the budget, none of the three can
// be observed, and the same expressions compiled without the tracker give
// the same results and errors.
//
// The estimate needs the size of what the expressions read. Upstream
// declares object and oldObject dyn, so their sizes are unknown to the
// checker and the estimate of anything that iterates or searches them is
// unbounded. Per request, their sizes are bounded (sizebound.go: by the
// protobuf size the generated code computes, or the length of the JSON
// form, since the CEL view of a typed object is its JSON view), so the
// estimate is made with every unknown size at most that bound, rounded up
// to a power of two (a larger bound only raises the estimate) and cached
// per policy version and power. The parameter object, always shown to
// CEL as an unstructured copy, is bounded by its JSON length, cached per
// parameter version (paramBound); namespaceObject, a copy of some of the
// namespace's fields, by the namespace's bound. Only sets that read
// nothing but object, oldObject, params and namespaceObject (no request,
// authorizer or variables) and compiled without error are eligible; any
// other set, and any request whose bound does not prove the limits, is
// evaluated by upstream's tracked programs.
type untracked struct {
	// validations and messages are index-aligned with the validator's
	// compiled expressions (nil for a placeholder).
	validations, messages []cel.Program
	// validationLoops and messageLoops say, index-aligned, whether a
	// program has a comprehension: only a comprehension checks the
	// context for cancellation, so the others are evaluated without one
	// (cel-go's ContextEval derives a cancellable context per call, a
	// child registered with the request's context).
	validationLoops, messageLoops []bool
	// asts are the checked expressions of both sets, and env the
	// environment they were checked in, for the estimates.
	asts []*cel.Ast
	env  *cel.Env
	// fits[k] caches whether the set fits the limits with every unknown
	// size at most 1<<k: 0 not yet known, 1 fits, 2 does not.
	fits [64]atomic.Uint32
	// readsNamespace says whether an expression reads namespaceObject,
	// whose bound is then part of the request's.
	readsNamespace bool
	// params caches the JSON length of parameter versions (paramBound);
	// held only around the map's use.
	mu     sync.Mutex
	params map[versionKey]int64
}

// readsOnlyBounded says whether an expression reads only the variables
// whose sizes the per-request bound covers: object, oldObject, params,
// namespaceObject.
func readsOnlyBounded(a *cel.Ast) bool {
	for _, ref := range a.NativeRep().ReferenceMap() {
		switch ref.Name {
		case plugincel.RequestVarName,
			plugincel.AuthorizerVarName, plugincel.RequestResourceAuthorizerVarName, plugincel.VariableVarName:
			return false
		}
	}
	return true
}

// envCapture is a ProgramOption that records the environment of the
// program being built: upstream's compiler builds its per-declaration
// environments privately, and the untracked programs and the estimates
// must come from the very same one.
type envCapture struct{ env atomic.Pointer[cel.Env] }

func (c *envCapture) option() cel.ProgramOption {
	return cel.ProgramOption(observeProgram(cel.ProgramOption(nil), func(p reflect.Value) error {
		f := p.Elem().FieldByName("Env")
		if !f.IsValid() {
			return errors.New("cel-go's program has no Env")
		}
		env, ok := f.Interface().(*cel.Env)
		if !ok {
			return errors.New("cel-go's program Env is not a *cel.Env")
		}
		c.env.Store(env)
		return nil
	}))
}

// observeProgram makes a ProgramOption (a function of cel-go's unexported
// program type, named here through the type parameter) from a function of
// the program's reflected value.
func observeProgram[P any](_ func(P) (P, error), f func(reflect.Value) error) func(P) (P, error) {
	return func(p P) (P, error) {
		return p, f(reflect.ValueOf(p))
	}
}

// withoutCostTracking is a ProgramOption that clears the OptTrackCost flag
// the base environment's options set (cel.CostTracking, cel.CostLimit):
// cel-go offers no option that removes it. It is checked once
// (untrackedWorks) so that a cel-go with another layout falls back to
// tracking everywhere.
var withoutCostTracking = cel.ProgramOption(observeProgram(cel.ProgramOption(nil), func(p reflect.Value) error {
	f := p.Elem().FieldByName("evalOpts")
	if !f.IsValid() || f.Type() != reflect.TypeFor[cel.EvalOption]() || !f.CanAddr() {
		return errors.New("cel-go's program has no evalOpts flags")
	}
	opts := (*cel.EvalOption)(unsafe.Pointer(f.UnsafeAddr()))
	*opts &^= cel.OptTrackCost
	return nil
}))

// untrackedWorks says whether withoutCostTracking gives a program without
// a cost tracker in this cel-go.
var untrackedWorks = sync.OnceValue(func() bool {
	env, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Env(environment.StoredExpressions)
	if err != nil {
		return false
	}
	ast, iss := env.Compile("1 + 1 == 2")
	if iss.Err() != nil {
		return false
	}
	prg, err := env.Program(ast, withoutCostTracking)
	if err != nil {
		return false
	}
	_, det, err := prg.Eval(map[string]any{})
	return err == nil && (det == nil || det.ActualCost() == nil)
})

// compileUntracked makes the untracked programs of a validator's sets, or
// nil when the sets are not eligible. env is the environment the tracked
// programs were built in (see envCapture); the sets must have compiled
// without error.
func compileUntracked(validationEnv, messageEnv *cel.Env, validations, messages []plugincel.CompilationResult) *untracked {
	if !untrackedWorks() || validationEnv == nil {
		return nil
	}
	u := &untracked{env: validationEnv}
	build := func(env *cel.Env, set []plugincel.CompilationResult) ([]cel.Program, []bool, bool) {
		progs, loops := make([]cel.Program, len(set)), make([]bool, len(set))
		for i, r := range set {
			if r.ExpressionAccessor == nil {
				continue
			}
			if r.Error != nil || r.Program == nil || env == nil {
				return nil, nil, false
			}
			ast, iss := env.Compile(r.ExpressionAccessor.GetExpression())
			if iss.Err() != nil || !readsOnlyBounded(ast) {
				return nil, nil, false
			}
			// upstream's program options (compile.go) and no tracker.
			prg, err := env.Program(ast, cel.InterruptCheckFrequency(celconfig.CheckFrequency), withoutCostTracking)
			if err != nil {
				return nil, nil, false
			}
			progs[i], loops[i] = prg, hasComprehension(ast)
			u.asts = append(u.asts, ast)
			u.readsNamespace = u.readsNamespace || reads(ast, plugincel.NamespaceVarName)
		}
		return progs, loops, true
	}
	var ok bool
	if u.validations, u.validationLoops, ok = build(validationEnv, validations); !ok {
		return nil
	}
	if u.messages, u.messageLoops, ok = build(messageEnv, messages); !ok {
		return nil
	}
	return u
}

// reads says whether a checked expression reads variable name.
func reads(a *cel.Ast, name string) bool {
	for _, ref := range a.NativeRep().ReferenceMap() {
		if ref.Name == name {
			return true
		}
	}
	return false
}

// hasComprehension says whether a checked expression has a comprehension
// (all, exists, map, filter and the like, after macro expansion): the
// only place cel-go's interpreter looks at the evaluation's context.
func hasComprehension(a *cel.Ast) bool {
	found := false
	celast.PostOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.ComprehensionKind {
			found = true
		}
	}))
	return found
}

// sizeBound estimates every unknown size as at most max.
type sizeBound struct{ max uint64 }

func (s sizeBound) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: s.max}
}

func (s sizeBound) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// fitsWithin says whether the sets cannot pass the per-call limit or the
// budget when every value they read has size at most 1<<k.
func (u *untracked) fitsWithin(k int) bool {
	switch u.fits[k].Load() {
	case 1:
		return true
	case 2:
		return false
	}
	fits := true
	var total uint64
	est := &library.CostEstimator{SizeEstimator: sizeBound{max: 1 << k}}
	for _, ast := range u.asts {
		c, err := u.env.EstimateCost(ast, est)
		if err != nil || c.Max > celconfig.PerCallLimit {
			fits = false
			break
		}
		if total += c.Max; total > celconfig.RuntimeCELCostBudget {
			fits = false
			break
		}
	}
	if fits {
		u.fits[k].Store(1)
	} else {
		u.fits[k].Store(2)
	}
	return fits
}

// maxUntrackedSize is the protobuf size past which an object is
// evaluated tracked without trying: bounding a large object's sizes (by
// its JSON form, for some types) would cost more than the tracking it
// spares. (Only the choice of path; either gives the same results.)
const maxUntrackedSize = 4096

// usable says whether this request may be evaluated untracked: the
// bounds of object and oldObject (sizeBoundOf), of the parameter
// (paramBound) and of the namespace (sizeBoundOf: namespaceObject is a
// copy of some of its fields) bound every size the sets can read, and
// within them the sets cannot pass the limits. Only typed objects within
// maxUntrackedSize are tried; custom resources, without a protobuf size,
// are evaluated tracked.
func (u *untracked) usable(object, oldObject, param runtime.Object, ns *corev1.Namespace) bool {
	n := u.paramBound(param)
	if ns != nil && u.readsNamespace {
		n = max(n, sizeBoundOf(ns))
	}
	if n < 0 {
		return false
	}
	for _, obj := range []runtime.Object{object, oldObject} {
		if obj == nil || reflect.ValueOf(obj).IsNil() {
			continue
		}
		s, ok := obj.(interface{ Size() int })
		if !ok {
			return false
		}
		size := s.Size()
		if size > maxUntrackedSize {
			return false
		}
		b := sizedBound(obj, size)
		if b < 0 {
			return false
		}
		n = max(n, b)
	}
	k := bits.Len64(uint64(n)) // 1<<k > n
	return k < len(u.fits) && u.fitsWithin(k)
}

// maxParamVersions bounds the parameter versions paramBound remembers.
const maxParamVersions = 1000

// paramBound bounds every size CEL can read in the parameter (0 for
// none, -1 for no bound): the length of its JSON form, which is what CEL
// sees of the unstructured copy a parameter is shown as, remembered per
// uid and resourceVersion (a parameter is the same object across the
// requests until it changes).
func (u *untracked) paramBound(param runtime.Object) int64 {
	if param == nil || reflect.ValueOf(param).IsNil() {
		return 0
	}
	m, err := meta.Accessor(param)
	if err != nil || m.GetUID() == "" || m.GetResourceVersion() == "" {
		return jsonLength(param)
	}
	key := versionKey{m.GetUID(), m.GetResourceVersion()}
	u.mu.Lock()
	n, ok := u.params[key]
	u.mu.Unlock()
	if ok {
		return n
	}
	n = jsonLength(param)
	u.mu.Lock()
	if u.params == nil || len(u.params) >= maxParamVersions {
		u.params = map[versionKey]int64{} // parameters changed many times: start over
	}
	u.params[key] = n
	u.mu.Unlock()
	return n
}
