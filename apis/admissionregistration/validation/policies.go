package validation

import (
	"fmt"
	"reflect"
	"strings"

	celgo "github.com/google/cel-go/cel"
	v1 "k8s.io/api/admissionregistration/v1"
	genericvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celenv "k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/util/jsonpath"
)

const (
	maxAuditAnnotations                     = 20
	maxAuditAnnotationValueExpressionLength = 5 * 1024
)

var (
	supportedValidationPolicyReason = sets.NewString(string(metav1.StatusReasonForbidden), string(metav1.StatusReasonInvalid), string(metav1.StatusReasonRequestEntityTooLarge))
	validValidationActions          = sets.NewString(string(v1.Deny), string(v1.Warn), string(v1.Audit))
	supportedPatchTypes             = sets.NewString(string(v1.PatchTypeApplyConfiguration), string(v1.PatchTypeJSONPatch))
)

func validateParamKind(gvk v1.ParamKind, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if gvk.APIVersion == "" {
		allErrors = append(allErrors, field.Required(fldPath.Child("apiVersion"), ""))
	} else if group, version, err := parseGroupVersion(gvk.APIVersion); err != nil {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("apiVersion"), gvk.APIVersion, err.Error()))
	} else {
		if group != "" {
			if errs := utilvalidation.IsDNS1123Subdomain(group); len(errs) > 0 {
				allErrors = append(allErrors, field.Invalid(fldPath.Child("apiVersion"), group, strings.Join(errs, ",")))
			}
		}
		if version == "" {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("apiVersion"), gvk.APIVersion, "version must be specified"))
		} else if errs := utilvalidation.IsDNS1035Label(version); len(errs) > 0 {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("apiVersion"), version, strings.Join(errs, ",")))
		}
	}
	if gvk.Kind == "" {
		allErrors = append(allErrors, field.Required(fldPath.Child("kind"), ""))
	} else if errs := utilvalidation.IsDNS1035Label(strings.ToLower(gvk.Kind)); len(errs) > 0 {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("kind"), gvk.Kind, "may have mixed case, but should otherwise match: "+strings.Join(errs, ",")))
	}
	return allErrors
}

func parseGroupVersion(gv string) (group, version string, err error) {
	if gv == "" || gv == "/" {
		return "", "", nil
	}
	switch strings.Count(gv, "/") {
	case 0:
		return "", gv, nil
	case 1:
		i := strings.Index(gv, "/")
		return gv[:i], gv[i+1:], nil
	}
	return "", "", fmt.Errorf("unexpected GroupVersion string: %v", gv)
}

func validateMatchResources(mc *v1.MatchResources, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if mc == nil {
		return nil
	}
	if mc.MatchPolicy == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("matchPolicy"), ""))
	} else if !supportedMatchPolicies.Has(string(*mc.MatchPolicy)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("matchPolicy"), *mc.MatchPolicy, supportedMatchPolicies.List()))
	}
	if mc.NamespaceSelector == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("namespaceSelector"), ""))
	} else {
		allErrors = append(allErrors, metav1validation.ValidateLabelSelector(mc.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("namespaceSelector"))...)
	}
	if mc.ObjectSelector == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("objectSelector"), ""))
	} else {
		allErrors = append(allErrors, metav1validation.ValidateLabelSelector(mc.ObjectSelector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("objectSelector"))...)
	}
	for i, r := range mc.ResourceRules {
		allErrors = append(allErrors, validateNamedRule(&r, fldPath.Child("resourceRules").Index(i))...)
	}
	for i, r := range mc.ExcludeResourceRules {
		allErrors = append(allErrors, validateNamedRule(&r, fldPath.Child("excludeResourceRules").Index(i))...)
	}
	return allErrors
}

func validateNamedRule(n *v1.NamedRuleWithOperations, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	names := sets.NewString()
	for i, name := range n.ResourceNames {
		for _, msg := range path.ValidatePathSegmentName(name, false) {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("resourceNames").Index(i), name, msg))
		}
		if names.Has(name) {
			allErrors = append(allErrors, field.Duplicate(fldPath.Child("resourceNames").Index(i), name))
		}
		names.Insert(name)
	}
	return append(allErrors, validateRuleWithOperations(&n.RuleWithOperations, fldPath)...)
}

// policy is what validating and mutating policies share.
type policy struct {
	meta            metav1.ObjectMeta
	failurePolicy   *v1.FailurePolicyType
	paramKind       *v1.ParamKind
	constraints     *v1.MatchResources
	matchConditions []v1.MatchCondition
	variables       []v1.Variable
}

// validatePolicy checks the common part and returns the compiler the
// policy's own expressions compile with (it knows the variables).
func (v *Validator) validatePolicy(p policy, opts options, fldPath *field.Path) (field.ErrorList, plugincel.Compiler) {
	allErrors := genericvalidation.ValidateObjectMeta(&p.meta, false, genericvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	compiler := v.compilerFor(len(p.variables) > 0)
	if p.failurePolicy == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("failurePolicy"), ""))
	} else if !supportedFailurePolicies.Has(string(*p.failurePolicy)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("failurePolicy"), *p.failurePolicy, supportedFailurePolicies.List()))
	}
	if p.paramKind != nil {
		opts.allowParamsInMatchConditions = true
		allErrors = append(allErrors, validateParamKind(*p.paramKind, fldPath.Child("paramKind"))...)
	}
	if p.constraints == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("matchConstraints"), ""))
	} else {
		allErrors = append(allErrors, validateMatchResources(p.constraints, fldPath.Child("matchConstraints"))...)
		if len(p.constraints.ResourceRules) == 0 {
			allErrors = append(allErrors, field.Required(fldPath.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	if !opts.ignoreMatchConditions {
		allErrors = append(allErrors, v.validateMatchConditions(p.matchConditions, opts, fldPath.Child("matchConditions"))...)
	}
	for i, vr := range p.variables {
		allErrors = append(allErrors, v.validateVariable(compiler, &vr, p.paramKind != nil, opts, fldPath.Child("variables").Index(i))...)
	}
	return allErrors, compiler
}

func (v *Validator) validateValidatingPolicy(p *v1.ValidatingAdmissionPolicy, opts options) field.ErrorList {
	fldPath := field.NewPath("spec")
	spec := &p.Spec
	allErrors, compiler := v.validatePolicy(policy{p.ObjectMeta, spec.FailurePolicy, spec.ParamKind, spec.MatchConstraints, spec.MatchConditions, spec.Variables}, opts, fldPath)
	hasParams := spec.ParamKind != nil
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("validations"), "validations or auditAnnotations must contain at least one item"))
		allErrors = append(allErrors, field.Required(fldPath.Child("auditAnnotations"), "validations or auditAnnotations must contain at least one item"))
		return allErrors
	}
	for i, val := range spec.Validations {
		allErrors = append(allErrors, v.validateValidation(compiler, &val, hasParams, opts, fldPath.Child("validations").Index(i))...)
	}
	if len(spec.AuditAnnotations) > maxAuditAnnotations {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("auditAnnotations"), spec.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.NewString()
	for i, a := range spec.AuditAnnotations {
		ap := fldPath.Child("auditAnnotations").Index(i)
		allErrors = append(allErrors, v.validateAuditAnnotation(compiler, p.Name, &a, hasParams, opts, ap)...)
		if keys.Has(a.Key) {
			allErrors = append(allErrors, field.Duplicate(ap.Child("key"), a.Key))
		}
		keys.Insert(a.Key)
	}
	return allErrors
}

func hasNewlines(s string) bool { return strings.ContainsAny(s, "\n\r") }

func (v *Validator) validateValidation(compiler plugincel.Compiler, val *v1.Validation, hasParams bool, opts options, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	expr := strings.TrimSpace(val.Expression)
	msg := strings.TrimSpace(val.Message)
	msgExpr := strings.TrimSpace(val.MessageExpression)
	if expr == "" {
		allErrors = append(allErrors, field.Required(fldPath.Child("expression"), "expression is not specified"))
	} else {
		allErrors = append(allErrors, validateCELCondition(compiler, &expression{val.Expression, []*celgo.Type{celgo.BoolType}},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, envType(opts.preexisting.validations, val.Expression), fldPath.Child("expression"))...)
	}
	if val.MessageExpression != "" && msgExpr == "" {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("messageExpression"), val.MessageExpression, "must be non-empty if specified"))
	} else if msgExpr != "" {
		allErrors = append(allErrors, validateCELCondition(compiler, &expression{val.MessageExpression, []*celgo.Type{celgo.StringType}},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams}, envType(opts.preexisting.messages, val.MessageExpression), fldPath.Child("messageExpression"))...)
	}
	if val.Message != "" && msg == "" {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("message"), val.Message, "message must be non-empty if specified"))
	} else if hasNewlines(msg) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("message"), val.Message, "message must not contain line breaks"))
	}
	if val.Reason != nil && !supportedValidationPolicyReason.Has(string(*val.Reason)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("reason"), *val.Reason, supportedValidationPolicyReason.List()))
	}
	return allErrors
}

func (v *Validator) validateAuditAnnotation(compiler plugincel.Compiler, policyName string, a *v1.AuditAnnotation, hasParams bool, opts options, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if policyName != "" {
		for _, msg := range utilvalidation.IsQualifiedName(policyName + "/" + a.Key) {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("key"), policyName+"/"+a.Key, msg))
		}
	} else {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("key"), a.Key, "requires metadata.name be non-empty"))
	}
	value := strings.TrimSpace(a.ValueExpression)
	switch {
	case value == "":
		allErrors = append(allErrors, field.Required(fldPath.Child("valueExpression"), "valueExpression is not specified"))
	case len(value) > maxAuditAnnotationValueExpressionLength:
		allErrors = append(allErrors, field.Required(fldPath.Child("valueExpression"), fmt.Sprintf("must not exceed %d bytes in length", maxAuditAnnotationValueExpressionLength)))
	default:
		allErrors = append(allErrors, validateCELCondition(compiler, &expression{value, []*celgo.Type{celgo.StringType, celgo.NullType}},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, envType(opts.preexisting.auditAnnotations, a.ValueExpression), fldPath.Child("valueExpression"))...)
	}
	return allErrors
}

func validatingPolicyOptions(old *v1.ValidatingAdmissionPolicy) options {
	opts := options{preexisting: newPreexisting()}
	if old == nil {
		return opts
	}
	for _, mc := range old.Spec.MatchConditions {
		opts.preexisting.matchConditions.Insert(mc.Expression)
	}
	for _, val := range old.Spec.Validations {
		opts.preexisting.validations.Insert(val.Expression)
		if val.MessageExpression != "" {
			opts.preexisting.messages.Insert(val.MessageExpression)
		}
	}
	for _, a := range old.Spec.AuditAnnotations {
		opts.preexisting.auditAnnotations.Insert(a.ValueExpression)
	}
	for _, vr := range old.Spec.Variables {
		opts.preexisting.variables.Insert(vr.Expression)
	}
	return opts
}

// ValidateValidatingAdmissionPolicy validates a new policy.
func (v *Validator) ValidateValidatingAdmissionPolicy(p *v1.ValidatingAdmissionPolicy) field.ErrorList {
	return v.validateValidatingPolicy(p, validatingPolicyOptions(nil))
}

// ValidateValidatingAdmissionPolicyUpdate validates an update of the
// policy (its status is the status subresource's).
func (v *Validator) ValidateValidatingAdmissionPolicyUpdate(p, old *v1.ValidatingAdmissionPolicy) field.ErrorList {
	opts := validatingPolicyOptions(old)
	opts.ignoreMatchConditions = reflect.DeepEqual(p.Spec.ParamKind, old.Spec.ParamKind) && reflect.DeepEqual(p.Spec.MatchConditions, old.Spec.MatchConditions)
	allErrors := genericvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrors, v.validateValidatingPolicy(p, opts)...)
}

// ValidateValidatingAdmissionPolicyStatusUpdate validates a write of the
// status subresource: the type checking's warnings and the conditions.
func ValidateValidatingAdmissionPolicyStatusUpdate(p, _ *v1.ValidatingAdmissionPolicy) field.ErrorList {
	fldPath := field.NewPath("status")
	var allErrors field.ErrorList
	if tc := p.Status.TypeChecking; tc != nil {
		for i, w := range tc.ExpressionWarnings {
			wp := fldPath.Child("typeChecking", "expressionWarnings").Index(i)
			if w.Warning == "" {
				allErrors = append(allErrors, field.Required(wp.Child("warning"), ""))
			}
			ref := strings.TrimSpace(w.FieldRef)
			if ref == "" {
				allErrors = append(allErrors, field.Required(wp.Child("fieldRef"), ""))
			} else if err := jsonpath.New("spec").Parse(fmt.Sprintf("{%s}", ref)); err != nil {
				allErrors = append(allErrors, field.Invalid(wp.Child("fieldRef"), ref, fmt.Sprintf("invalid JSONPath: %v", err)))
			}
		}
	}
	return append(allErrors, metav1validation.ValidateConditions(p.Status.Conditions, fldPath.Child("conditions"))...)
}

func validateParamRef(pr *v1.ParamRef, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if pr == nil {
		return nil
	}
	if pr.Name != "" {
		for _, msg := range path.ValidatePathSegmentName(pr.Name, false) {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("name"), pr.Name, msg))
		}
		if pr.Selector != nil {
			allErrors = append(allErrors, field.Forbidden(fldPath.Child("name"), `name and selector are mutually exclusive`))
		}
	}
	if pr.Selector != nil {
		allErrors = append(allErrors, metav1validation.ValidateLabelSelector(pr.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
		if pr.Name != "" {
			allErrors = append(allErrors, field.Forbidden(fldPath.Child("selector"), `name and selector are mutually exclusive`))
		}
	}
	if pr.Name == "" && pr.Selector == nil {
		allErrors = append(allErrors, field.Required(fldPath, `one of name or selector must be specified`))
	}
	if pr.ParameterNotFoundAction == nil || *pr.ParameterNotFoundAction == "" {
		allErrors = append(allErrors, field.Required(fldPath.Child("parameterNotFoundAction"), ""))
	} else if *pr.ParameterNotFoundAction != v1.DenyAction && *pr.ParameterNotFoundAction != v1.AllowAction {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("parameterNotFoundAction"), pr.ParameterNotFoundAction, []string{string(v1.DenyAction), string(v1.AllowAction)}))
	}
	return allErrors
}

func validateValidationActions(va []v1.ValidationAction, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	actions := sets.NewString()
	for i, a := range va {
		if !validValidationActions.Has(string(a)) {
			allErrors = append(allErrors, field.NotSupported(fldPath.Index(i), a, validValidationActions.List()))
		}
		if actions.Has(string(a)) {
			allErrors = append(allErrors, field.Duplicate(fldPath.Index(i), a))
		}
		actions.Insert(string(a))
	}
	if actions.Has(string(v1.Deny)) && actions.Has(string(v1.Warn)) {
		allErrors = append(allErrors, field.Invalid(fldPath, va, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
	}
	if len(actions) == 0 {
		allErrors = append(allErrors, field.Required(fldPath, "at least one validation action is required"))
	}
	return allErrors
}

func validateBinding(meta *metav1.ObjectMeta, policyName string, paramRef *v1.ParamRef, match *v1.MatchResources) field.ErrorList {
	fldPath := field.NewPath("spec")
	allErrors := genericvalidation.ValidateObjectMeta(meta, false, genericvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	if policyName == "" {
		allErrors = append(allErrors, field.Required(fldPath.Child("policyName"), ""))
	} else {
		for _, msg := range genericvalidation.NameIsDNSSubdomain(policyName, false) {
			allErrors = append(allErrors, field.Invalid(fldPath.Child("policyName"), policyName, msg))
		}
	}
	allErrors = append(allErrors, validateParamRef(paramRef, fldPath.Child("paramRef"))...)
	return append(allErrors, validateMatchResources(match, fldPath.Child("matchResources"))...)
}

// ValidateValidatingAdmissionPolicyBinding validates a binding.
func ValidateValidatingAdmissionPolicyBinding(b *v1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	allErrors := validateBinding(&b.ObjectMeta, b.Spec.PolicyName, b.Spec.ParamRef, b.Spec.MatchResources)
	return append(allErrors, validateValidationActions(b.Spec.ValidationActions, field.NewPath("spec", "validationActions"))...)
}

// ValidateValidatingAdmissionPolicyBindingUpdate validates an update.
func ValidateValidatingAdmissionPolicyBindingUpdate(b, old *v1.ValidatingAdmissionPolicyBinding) field.ErrorList {
	allErrors := genericvalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrors, ValidateValidatingAdmissionPolicyBinding(b)...)
}

// ValidateMutatingAdmissionPolicy validates a mutating policy: what it
// shares with a validating one, then its mutations (a patch type and an
// expression that compiles) and reinvocationPolicy.
func (v *Validator) ValidateMutatingAdmissionPolicy(p *v1.MutatingAdmissionPolicy) field.ErrorList {
	return v.validateMutatingPolicy(p, options{preexisting: newPreexisting()})
}

// ValidateMutatingAdmissionPolicyUpdate validates an update.
func (v *Validator) ValidateMutatingAdmissionPolicyUpdate(p, old *v1.MutatingAdmissionPolicy) field.ErrorList {
	opts := options{preexisting: newPreexisting()}
	opts.ignoreMatchConditions = reflect.DeepEqual(p.Spec.ParamKind, old.Spec.ParamKind) && reflect.DeepEqual(p.Spec.MatchConditions, old.Spec.MatchConditions)
	for _, mc := range old.Spec.MatchConditions {
		opts.preexisting.matchConditions.Insert(mc.Expression)
	}
	for _, vr := range old.Spec.Variables {
		opts.preexisting.variables.Insert(vr.Expression)
	}
	allErrors := genericvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrors, v.validateMutatingPolicy(p, opts)...)
}

func (v *Validator) validateMutatingPolicy(p *v1.MutatingAdmissionPolicy, opts options) field.ErrorList {
	fldPath := field.NewPath("spec")
	spec := &p.Spec
	allErrors, compiler := v.validatePolicy(policy{p.ObjectMeta, spec.FailurePolicy, spec.ParamKind, spec.MatchConstraints, spec.MatchConditions, spec.Variables}, opts, fldPath)
	if len(spec.Mutations) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("mutations"), "mutations must contain at least one item"))
	}
	for i, m := range spec.Mutations {
		mp := fldPath.Child("mutations").Index(i)
		var text string
		var exprPath *field.Path
		switch m.PatchType {
		case v1.PatchTypeApplyConfiguration:
			if m.ApplyConfiguration == nil {
				allErrors = append(allErrors, field.Required(mp.Child("applyConfiguration"), "applyConfiguration field is required when patchType is 'ApplyConfiguration'"))
				continue
			}
			text, exprPath = m.ApplyConfiguration.Expression, mp.Child("applyConfiguration", "expression")
		case v1.PatchTypeJSONPatch:
			if m.JSONPatch == nil {
				allErrors = append(allErrors, field.Required(mp.Child("jsonPatch"), "jsonPatch field is required when patchType is 'JSONPatch'"))
				continue
			}
			text, exprPath = m.JSONPatch.Expression, mp.Child("jsonPatch", "expression")
		case "":
			allErrors = append(allErrors, field.Required(mp.Child("patchType"), ""))
			continue
		default:
			allErrors = append(allErrors, field.NotSupported(mp.Child("patchType"), m.PatchType, supportedPatchTypes.List()))
			continue
		}
		if strings.TrimSpace(text) == "" {
			allErrors = append(allErrors, field.Required(exprPath, ""))
			continue
		}
		allErrors = append(allErrors, validateCELCondition(compiler, &expression{text, []*celgo.Type{celgo.AnyType, celgo.DynType}},
			plugincel.OptionalVariableDeclarations{HasParams: spec.ParamKind != nil, HasAuthorizer: true, HasPatchTypes: true}, celenv.NewExpressions, exprPath)...)
	}
	if spec.ReinvocationPolicy != "" && !supportedReinvocationPolicies.Has(string(spec.ReinvocationPolicy)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("reinvocationPolicy"), spec.ReinvocationPolicy, supportedReinvocationPolicies.List()))
	}
	return allErrors
}

// ValidateMutatingAdmissionPolicyBinding validates a binding.
func ValidateMutatingAdmissionPolicyBinding(b *v1.MutatingAdmissionPolicyBinding) field.ErrorList {
	return validateBinding(&b.ObjectMeta, b.Spec.PolicyName, b.Spec.ParamRef, b.Spec.MatchResources)
}

// ValidateMutatingAdmissionPolicyBindingUpdate validates an update.
func ValidateMutatingAdmissionPolicyBindingUpdate(b, old *v1.MutatingAdmissionPolicyBinding) field.ErrorList {
	allErrors := genericvalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrors, ValidateMutatingAdmissionPolicyBinding(b)...)
}
