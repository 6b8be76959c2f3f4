package validation

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	v1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Validator validates admissionregistration.k8s.io objects. It holds the
// CEL compiler their expressions are checked with (building one costs
// milliseconds, so it is built once, on first use), and is safe for
// concurrent use.
type Validator struct {
	once     sync.Once
	compiler plugincel.Compiler
}

// New returns a Validator.
func New() *Validator { return &Validator{} }

func (v *Validator) stateless() plugincel.Compiler {
	v.once.Do(func() {
		v.compiler = plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	})
	return v.compiler
}

// compilerFor returns the compiler for one policy: a fresh composited one
// when it has variables (it remembers them), else the shared stateless one.
func (v *Validator) compilerFor(variables bool) plugincel.Compiler {
	if !variables {
		return v.stateless()
	}
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return v.stateless()
	}
	return c
}

// expression is a CEL expression with the types it may return.
type expression struct {
	text    string
	returns []*celgo.Type
}

func (e *expression) GetExpression() string      { return e.text }
func (e *expression) ReturnTypes() []*celgo.Type { return e.returns }
func (e *expression) GetName() string            { return "" }
func (e *namedExpression) GetName() string       { return e.name }
func (e *namedExpression) GetExpression() string { return e.text }
func (e *namedExpression) ReturnTypes() []*celgo.Type {
	return []*celgo.Type{celgo.AnyType, celgo.DynType}
}

// namedExpression is a policy variable.
type namedExpression struct{ name, text string }

func envType(preexisting sets.Set[string], expr string) environment.Type {
	if preexisting.Has(expr) {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

func validateCELCondition(compiler plugincel.Compiler, expr plugincel.ExpressionAccessor, vars plugincel.OptionalVariableDeclarations, env environment.Type, fldPath *field.Path) field.ErrorList {
	result := compiler.CompileCELExpression(expr, vars, env)
	if result.Error == nil {
		return nil
	}
	return field.ErrorList{convertCELError(fldPath, expr, result.Error)}
}

func convertCELError(fldPath *field.Path, expr plugincel.ExpressionAccessor, err *apiservercel.Error) *field.Error {
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.Required(fldPath, err.Detail)
	case apiservercel.ErrorTypeInvalid:
		return field.Invalid(fldPath, expr.GetExpression(), err.Detail)
	case apiservercel.ErrorTypeInternal:
		return field.InternalError(fldPath, err)
	}
	return field.InternalError(fldPath, fmt.Errorf("unsupported error type: %w", err))
}

func (v *Validator) validateMatchConditions(m []v1.MatchCondition, opts options, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	names := sets.NewString()
	if len(m) > 64 {
		allErrors = append(allErrors, field.TooMany(fldPath, len(m), 64))
	}
	for i, mc := range m {
		p := fldPath.Index(i)
		if expr := strings.TrimSpace(mc.Expression); expr == "" {
			allErrors = append(allErrors, field.Required(p.Child("expression"), ""))
		} else {
			allErrors = append(allErrors, validateCELCondition(v.stateless(), &matchconditions.MatchCondition{Expression: expr},
				plugincel.OptionalVariableDeclarations{HasParams: opts.allowParamsInMatchConditions, HasAuthorizer: true},
				envType(opts.preexisting.matchConditions, expr), p.Child("expression"))...)
		}
		if mc.Name == "" {
			allErrors = append(allErrors, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(mc.Name) {
				allErrors = append(allErrors, field.Invalid(p.Child("name"), mc.Name, msg))
			}
			if names.Has(mc.Name) {
				allErrors = append(allErrors, field.Duplicate(p.Child("name"), mc.Name))
			}
			names.Insert(mc.Name)
		}
	}
	return allErrors
}

var celIdentRegex = regexp.MustCompile("^[_a-zA-Z][_a-zA-Z0-9]*$")
var celReserved = sets.NewString("true", "false", "null", "in", "as", "break", "const", "continue", "else",
	"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")

func isCELIdentifier(name string) bool {
	return celIdentRegex.MatchString(name) && !celReserved.Has(name)
}

func (v *Validator) validateVariable(compiler plugincel.Compiler, vr *v1.Variable, hasParams bool, opts options, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if strings.TrimSpace(vr.Name) == "" {
		allErrors = append(allErrors, field.Required(fldPath.Child("name"), "name is not specified"))
	} else if !isCELIdentifier(vr.Name) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("name"), vr.Name, "name is not a valid CEL identifier"))
	}
	if strings.TrimSpace(vr.Expression) == "" {
		return append(allErrors, field.Required(fldPath.Child("expression"), "expression is not specified"))
	}
	composited, ok := compiler.(*plugincel.CompositedCompiler)
	if !ok {
		return append(allErrors, field.InternalError(fldPath, fmt.Errorf("variable composition is not allowed")))
	}
	variable := &namedExpression{name: vr.Name, text: vr.Expression}
	result := composited.CompileAndStoreVariable(variable, plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, envType(opts.preexisting.variables, vr.Expression))
	if result.Error != nil {
		allErrors = append(allErrors, convertCELError(fldPath.Child("expression"), variable, result.Error))
	}
	return allErrors
}
