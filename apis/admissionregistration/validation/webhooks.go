// Package validation is upstream's validation of admissionregistration.k8s.io
// (pkg/apis/admissionregistration/validation), ported to the v1 types with
// its field paths and messages: webhook configurations, validating and
// mutating admission policies and their bindings. CEL expressions
// (matchConditions, validations, variables, messageExpressions,
// mutations) are compiled with upstream's compilers, so one that does not
// compile is refused with "compilation failed: ...".
package validation

import (
	"fmt"
	"reflect"
	"strings"

	v1 "k8s.io/api/admissionregistration/v1"
	genericvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/util/webhook"
)

// AcceptedAdmissionReviewVersions are the AdmissionReview versions a
// webhook may ask for, as upstream.
var AcceptedAdmissionReviewVersions = []string{"v1", "v1beta1"}

var (
	supportedFailurePolicies      = sets.NewString(string(v1.Ignore), string(v1.Fail))
	supportedMatchPolicies        = sets.NewString(string(v1.Exact), string(v1.Equivalent))
	supportedSideEffectClasses    = sets.NewString(string(v1.SideEffectClassUnknown), string(v1.SideEffectClassNone), string(v1.SideEffectClassSome), string(v1.SideEffectClassNoneOnDryRun))
	noSideEffectClasses           = sets.NewString(string(v1.SideEffectClassNone), string(v1.SideEffectClassNoneOnDryRun))
	supportedOperations           = sets.NewString(string(v1.OperationAll), string(v1.Create), string(v1.Update), string(v1.Delete), string(v1.Connect))
	supportedReinvocationPolicies = sets.NewString(string(v1.NeverReinvocationPolicy), string(v1.IfNeededReinvocationPolicy))
	validScopes                   = sets.NewString(string(v1.ClusterScope), string(v1.NamespacedScope), string(v1.AllScopes))
)

// options are upstream's validationOptions: what an update relaxes so
// that objects stored under older rules stay updatable.
type options struct {
	ignoreMatchConditions                   bool
	allowParamsInMatchConditions            bool
	requireNoSideEffects                    bool
	requireRecognizedAdmissionReviewVersion bool
	requireUniqueWebhookNames               bool
	allowInvalidLabelValueInSelector        bool
	preexisting                             preexisting
}

// preexisting are the expressions the old object had: they compile in
// the stored-expressions environment, as upstream.
type preexisting struct {
	matchConditions, validations, messages, auditAnnotations, variables sets.Set[string]
}

func newPreexisting() preexisting {
	return preexisting{sets.New[string](), sets.New[string](), sets.New[string](), sets.New[string](), sets.New[string]()}
}

func createOptions() options {
	return options{requireNoSideEffects: true, requireRecognizedAdmissionReviewVersion: true, requireUniqueWebhookNames: true, preexisting: newPreexisting()}
}

func hasWildcard(slice []string) bool {
	for _, s := range slice {
		if s == "*" {
			return true
		}
	}
	return false
}

func validateResources(resources []string, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(resources) == 0 {
		allErrors = append(allErrors, field.Required(fldPath, ""))
	}
	resourcesWithWildcardSubresources := sets.String{}
	subResourcesWithWildcardResource := sets.String{}
	hasDoubleWildcard, hasSingleWildcard, hasResourceWithoutSubresource := false, false, false
	for i, resSub := range resources {
		if resSub == "" {
			allErrors = append(allErrors, field.Required(fldPath.Index(i), ""))
			continue
		}
		if resSub == "*/*" {
			hasDoubleWildcard = true
		}
		if resSub == "*" {
			hasSingleWildcard = true
		}
		parts := strings.SplitN(resSub, "/", 2)
		if len(parts) == 1 {
			hasResourceWithoutSubresource = resSub != "*"
			continue
		}
		res, sub := parts[0], parts[1]
		if resourcesWithWildcardSubresources.Has(res) {
			allErrors = append(allErrors, field.Invalid(fldPath.Index(i), resSub, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, resSub)))
		}
		if subResourcesWithWildcardResource.Has(sub) {
			allErrors = append(allErrors, field.Invalid(fldPath.Index(i), resSub, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, resSub)))
		}
		if sub == "*" {
			resourcesWithWildcardSubresources.Insert(res)
		}
		if res == "*" {
			subResourcesWithWildcardResource.Insert(sub)
		}
	}
	if len(resources) > 1 && hasDoubleWildcard {
		allErrors = append(allErrors, field.Invalid(fldPath, resources, "if '*/*' is present, must not specify other resources"))
	}
	if hasSingleWildcard && hasResourceWithoutSubresource {
		allErrors = append(allErrors, field.Invalid(fldPath, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return allErrors
}

func validateRule(rule *v1.Rule, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(rule.APIGroups) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("apiGroups"), ""))
	}
	if len(rule.APIGroups) > 1 && hasWildcard(rule.APIGroups) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("apiGroups"), rule.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	if len(rule.APIVersions) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("apiVersions"), ""))
	}
	if len(rule.APIVersions) > 1 && hasWildcard(rule.APIVersions) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("apiVersions"), rule.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, version := range rule.APIVersions {
		if version == "" {
			allErrors = append(allErrors, field.Required(fldPath.Child("apiVersions").Index(i), ""))
		}
	}
	allErrors = append(allErrors, validateResources(rule.Resources, fldPath.Child("resources"))...)
	if rule.Scope != nil && !validScopes.Has(string(*rule.Scope)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("scope"), *rule.Scope, validScopes.List()))
	}
	return allErrors
}

func validateRuleWithOperations(r *v1.RuleWithOperations, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(r.Operations) == 0 {
		allErrors = append(allErrors, field.Required(fldPath.Child("operations"), ""))
	}
	hasAll := false
	for _, o := range r.Operations {
		hasAll = hasAll || o == v1.OperationAll
	}
	if len(r.Operations) > 1 && hasAll {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("operations"), r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, operation := range r.Operations {
		if !supportedOperations.Has(string(operation)) {
			allErrors = append(allErrors, field.NotSupported(fldPath.Child("operations").Index(i), operation, supportedOperations.List()))
		}
	}
	return append(allErrors, validateRule(&r.Rule, fldPath)...)
}

func validateAdmissionReviewVersions(versions []string, requireRecognized bool, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	if len(versions) < 1 {
		return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must specify one of %v", strings.Join(AcceptedAdmissionReviewVersions, ", ")))}
	}
	seen := map[string]bool{}
	accepted := false
	for i, v := range versions {
		if seen[v] {
			allErrors = append(allErrors, field.Invalid(fldPath.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			allErrors = append(allErrors, field.Invalid(fldPath.Index(i), v, msg))
		}
		accepted = accepted || v == "v1" || v == "v1beta1"
	}
	if requireRecognized && !accepted {
		allErrors = append(allErrors, field.Invalid(fldPath, versions, fmt.Sprintf("must include at least one of %v", strings.Join(AcceptedAdmissionReviewVersions, ", "))))
	}
	return allErrors
}

// hook is what validating and mutating webhooks share.
type hook struct {
	name                            string
	rules                           []v1.RuleWithOperations
	failurePolicy                   *v1.FailurePolicyType
	matchPolicy                     *v1.MatchPolicyType
	sideEffects                     *v1.SideEffectClass
	timeoutSeconds                  *int32
	namespaceSelector, objectSelect *metav1.LabelSelector
	clientConfig                    v1.WebhookClientConfig
	matchConditions                 []v1.MatchCondition
	admissionReviewVersions         []string
}

func (v *Validator) validateHook(h hook, opts options, fldPath *field.Path) field.ErrorList {
	allErrors := utilvalidation.IsFullyQualifiedName(fldPath.Child("name"), h.name)
	selectorOpts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.allowInvalidLabelValueInSelector}
	for i, rule := range h.rules {
		allErrors = append(allErrors, validateRuleWithOperations(&rule, fldPath.Child("rules").Index(i))...)
	}
	if h.failurePolicy != nil && !supportedFailurePolicies.Has(string(*h.failurePolicy)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("failurePolicy"), *h.failurePolicy, supportedFailurePolicies.List()))
	}
	if h.matchPolicy != nil && !supportedMatchPolicies.Has(string(*h.matchPolicy)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("matchPolicy"), *h.matchPolicy, supportedMatchPolicies.List()))
	}
	allowed := supportedSideEffectClasses
	if opts.requireNoSideEffects {
		allowed = noSideEffectClasses
	}
	if h.sideEffects == nil {
		allErrors = append(allErrors, field.Required(fldPath.Child("sideEffects"), fmt.Sprintf("must specify one of %v", strings.Join(allowed.List(), ", "))))
	} else if !allowed.Has(string(*h.sideEffects)) {
		allErrors = append(allErrors, field.NotSupported(fldPath.Child("sideEffects"), *h.sideEffects, allowed.List()))
	}
	if h.timeoutSeconds != nil && (*h.timeoutSeconds > 30 || *h.timeoutSeconds < 1) {
		allErrors = append(allErrors, field.Invalid(fldPath.Child("timeoutSeconds"), *h.timeoutSeconds, "the timeout value must be between 1 and 30 seconds"))
	}
	if h.namespaceSelector != nil {
		allErrors = append(allErrors, metav1validation.ValidateLabelSelector(h.namespaceSelector, selectorOpts, fldPath.Child("namespaceSelector"))...)
	}
	if h.objectSelect != nil {
		allErrors = append(allErrors, metav1validation.ValidateLabelSelector(h.objectSelect, selectorOpts, fldPath.Child("objectSelector"))...)
	}
	cc := h.clientConfig
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		allErrors = append(allErrors, field.Required(fldPath.Child("clientConfig"), "exactly one of url or service is required"))
	case cc.URL != nil:
		allErrors = append(allErrors, webhook.ValidateWebhookURL(fldPath.Child("clientConfig").Child("url"), *cc.URL, true)...)
	case cc.Service != nil:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		allErrors = append(allErrors, webhook.ValidateWebhookService(fldPath.Child("clientConfig").Child("service"), cc.Service.Name, cc.Service.Namespace, cc.Service.Path, port)...)
	}
	if !opts.ignoreMatchConditions {
		allErrors = append(allErrors, v.validateMatchConditions(h.matchConditions, opts, fldPath.Child("matchConditions"))...)
	}
	return allErrors
}

func (v *Validator) validateHooks(hooks []hook, opts options) field.ErrorList {
	var allErrors field.ErrorList
	names := sets.NewString()
	for i, h := range hooks {
		path := field.NewPath("webhooks").Index(i)
		allErrors = append(allErrors, v.validateHook(h, opts, path)...)
		allErrors = append(allErrors, validateAdmissionReviewVersions(h.admissionReviewVersions, opts.requireRecognizedAdmissionReviewVersion, path.Child("admissionReviewVersions"))...)
		if opts.requireUniqueWebhookNames && h.name != "" {
			if names.Has(h.name) {
				allErrors = append(allErrors, field.Duplicate(path.Child("name"), h.name))
			}
			names.Insert(h.name)
		}
	}
	return allErrors
}

func validatingHooks(ws []v1.ValidatingWebhook) []hook {
	out := make([]hook, len(ws))
	for i, w := range ws {
		out[i] = hook{w.Name, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects, w.TimeoutSeconds, w.NamespaceSelector, w.ObjectSelector, w.ClientConfig, w.MatchConditions, w.AdmissionReviewVersions}
	}
	return out
}

func mutatingHooks(ws []v1.MutatingWebhook) []hook {
	out := make([]hook, len(ws))
	for i, w := range ws {
		out[i] = hook{w.Name, w.Rules, w.FailurePolicy, w.MatchPolicy, w.SideEffects, w.TimeoutSeconds, w.NamespaceSelector, w.ObjectSelector, w.ClientConfig, w.MatchConditions, w.AdmissionReviewVersions}
	}
	return out
}

// updateOptions are upstream's: what the old webhooks already broke is
// not held against an update.
func updateOptions(newHooks, oldHooks []hook) options {
	opts := options{
		ignoreMatchConditions:                   len(newHooks) == len(oldHooks),
		requireNoSideEffects:                    true,
		requireRecognizedAdmissionReviewVersion: true,
		requireUniqueWebhookNames:               true,
		preexisting:                             newPreexisting(),
	}
	names := sets.NewString()
	selectorOpts := metav1validation.LabelSelectorValidationOptions{}
	for i, h := range oldHooks {
		if opts.ignoreMatchConditions && !reflect.DeepEqual(newHooks[i].matchConditions, h.matchConditions) {
			opts.ignoreMatchConditions = false
		}
		if h.sideEffects == nil || !noSideEffectClasses.Has(string(*h.sideEffects)) {
			opts.requireNoSideEffects = false
		}
		recognized := false
		for _, v := range h.admissionReviewVersions {
			recognized = recognized || v == "v1" || v == "v1beta1"
		}
		if !recognized && len(h.admissionReviewVersions) > 0 {
			opts.requireRecognizedAdmissionReviewVersion = false
		}
		if names.Has(h.name) {
			opts.requireUniqueWebhookNames = false
		}
		names.Insert(h.name)
		for _, s := range []*metav1.LabelSelector{h.namespaceSelector, h.objectSelect} {
			if s != nil && len(metav1validation.ValidateLabelSelector(s, selectorOpts, nil)) > 0 {
				opts.allowInvalidLabelValueInSelector = true
			}
		}
		for _, mc := range h.matchConditions {
			opts.preexisting.matchConditions.Insert(mc.Expression)
		}
	}
	return opts
}

// ValidateValidatingWebhookConfiguration validates a new configuration.
func (v *Validator) ValidateValidatingWebhookConfiguration(c *v1.ValidatingWebhookConfiguration) field.ErrorList {
	allErrors := genericvalidation.ValidateObjectMeta(&c.ObjectMeta, false, genericvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(allErrors, v.validateHooks(validatingHooks(c.Webhooks), createOptions())...)
}

// ValidateValidatingWebhookConfigurationUpdate validates an update.
func (v *Validator) ValidateValidatingWebhookConfigurationUpdate(c, old *v1.ValidatingWebhookConfiguration) field.ErrorList {
	allErrors := genericvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrors = append(allErrors, genericvalidation.ValidateObjectMeta(&c.ObjectMeta, false, genericvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	return append(allErrors, v.validateHooks(validatingHooks(c.Webhooks), updateOptions(validatingHooks(c.Webhooks), validatingHooks(old.Webhooks)))...)
}

// ValidateMutatingWebhookConfiguration validates a new configuration.
func (v *Validator) ValidateMutatingWebhookConfiguration(c *v1.MutatingWebhookConfiguration) field.ErrorList {
	allErrors := genericvalidation.ValidateObjectMeta(&c.ObjectMeta, false, genericvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrors = append(allErrors, v.validateHooks(mutatingHooks(c.Webhooks), createOptions())...)
	return append(allErrors, validateReinvocation(c.Webhooks)...)
}

// ValidateMutatingWebhookConfigurationUpdate validates an update.
func (v *Validator) ValidateMutatingWebhookConfigurationUpdate(c, old *v1.MutatingWebhookConfiguration) field.ErrorList {
	allErrors := genericvalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrors = append(allErrors, genericvalidation.ValidateObjectMeta(&c.ObjectMeta, false, genericvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	allErrors = append(allErrors, v.validateHooks(mutatingHooks(c.Webhooks), updateOptions(mutatingHooks(c.Webhooks), mutatingHooks(old.Webhooks)))...)
	return append(allErrors, validateReinvocation(c.Webhooks)...)
}

func validateReinvocation(ws []v1.MutatingWebhook) field.ErrorList {
	var allErrors field.ErrorList
	for i, w := range ws {
		if w.ReinvocationPolicy != nil && !supportedReinvocationPolicies.Has(string(*w.ReinvocationPolicy)) {
			allErrors = append(allErrors, field.NotSupported(field.NewPath("webhooks").Index(i).Child("reinvocationPolicy"), *w.ReinvocationPolicy, supportedReinvocationPolicies.List()))
		}
	}
	return allErrors
}
