package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateLimitRange is upstream's ValidateLimitRange (metadata is the
// Store's): known or qualified limit types, once each; resource names for
// the type; min ≤ default request ≤ default ≤ max; ratios at least 1; a
// PersistentVolumeClaim limit bounds storage.
func ValidateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[corev1.LimitType]bool{}
	fldPath := field.NewPath("spec", "limits")
	for i := range lr.Spec.Limits {
		idx := fldPath.Index(i)
		limit := &lr.Spec.Limits[i]
		allErrs = append(allErrs, validateLimitTypeName(limit.Type, idx.Child("type"))...)
		if seen[limit.Type] {
			allErrs = append(allErrs, field.Duplicate(idx.Child("type"), limit.Type))
		}
		seen[limit.Type] = true
		name := func(n corev1.ResourceName, p *field.Path) field.ErrorList {
			if limit.Type == corev1.LimitTypePod || limit.Type == corev1.LimitTypeContainer {
				return validateContainerResourceName(n, p)
			}
			return validateResourceName(n, p)
		}
		for _, part := range []struct {
			name string
			list corev1.ResourceList
		}{{"max", limit.Max}, {"min", limit.Min}, {"default", limit.Default}, {"defaultRequest", limit.DefaultRequest}, {"maxLimitRequestRatio", limit.MaxLimitRequestRatio}} {
			if limit.Type == corev1.LimitTypePod && (part.name == "default" || part.name == "defaultRequest") {
				if len(part.list) > 0 {
					allErrs = append(allErrs, field.Forbidden(idx.Child(part.name), "may not be specified when `type` is 'Pod'"))
				}
				continue
			}
			for _, k := range sortedNames(part.list) {
				allErrs = append(allErrs, name(k, idx.Child(part.name).Key(string(k)))...)
			}
		}
		if limit.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := limit.Min[corev1.ResourceStorage]
			_, hasMax := limit.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				allErrs = append(allErrs, field.Required(idx.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		keys := map[corev1.ResourceName]bool{}
		for _, l := range []corev1.ResourceList{limit.Max, limit.Min, limit.Default, limit.DefaultRequest, limit.MaxLimitRequestRatio} {
			for k := range l {
				keys[k] = true
			}
		}
		for _, k := range slices.Sorted(func(yield func(corev1.ResourceName) bool) {
			for k := range keys {
				if !yield(k) {
					return
				}
			}
		}) {
			minQ, hasMin := limit.Min[k]
			maxQ, hasMax := limit.Max[k]
			defQ, hasDef := limit.Default[k]
			if limit.Type == corev1.LimitTypePod {
				hasDef = false
			}
			reqQ, hasReq := limit.DefaultRequest[k]
			if limit.Type == corev1.LimitTypePod {
				hasReq = false
			}
			ratio, hasRatio := limit.MaxLimitRequestRatio[k]
			key := string(k)
			if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("min").Key(key), minQ, fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
			}
			if hasReq && hasMin && minQ.Cmp(reqQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("defaultRequest").Key(key), reqQ, fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), reqQ.String())))
			}
			if hasReq && hasMax && reqQ.Cmp(maxQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("defaultRequest").Key(key), reqQ, fmt.Sprintf("default request value %s is greater than max value %s", reqQ.String(), maxQ.String())))
			}
			if hasReq && hasDef && reqQ.Cmp(defQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("defaultRequest").Key(key), reqQ, fmt.Sprintf("default request value %s is greater than default limit value %s", reqQ.String(), defQ.String())))
			}
			if hasDef && hasMin && minQ.Cmp(defQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("default").Key(key), minQ, fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), defQ.String())))
			}
			if hasDef && hasMax && defQ.Cmp(maxQ) > 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("default").Key(key), maxQ, fmt.Sprintf("default value %s is greater than max value %s", defQ.String(), maxQ.String())))
			}
			if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
				allErrs = append(allErrs, field.Invalid(idx.Child("maxLimitRequestRatio").Key(key), ratio, fmt.Sprintf("ratio %s is less than 1", ratio.String())))
			}
		}
	}
	return allErrs
}

// ValidateLimitRangeUpdate is upstream's: the whole object again.
func ValidateLimitRangeUpdate(lr, _ *corev1.LimitRange) field.ErrorList {
	return ValidateLimitRange(lr)
}

func validateLimitTypeName(value corev1.LimitType, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(value)) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	if len(allErrs) == 0 && !strings.Contains(string(value), "/") {
		switch value {
		case corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim:
		default:
			allErrs = append(allErrs, field.Invalid(fldPath, value, "must be a standard limit type or fully qualified"))
		}
	}
	return allErrs
}

var (
	quotaScopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
		corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopePriorityClass,
		corev1.ResourceQuotaScopeCrossNamespacePodAffinity, corev1.ResourceQuotaScopeVolumeAttributesClass}
	conflictingScopes = [][2]corev1.ResourceQuotaScope{
		{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort},
		{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating},
	}
)

// ValidateResourceQuota is upstream's ValidateResourceQuota (metadata is
// the Store's): qualified resource names with non-negative quantities in
// spec.hard and the status, known scopes that do not conflict, a scope
// selector's operators.
func ValidateResourceQuota(rq *corev1.ResourceQuota) field.ErrorList {
	allErrs := validateQuotaSpec(&rq.Spec, field.NewPath("spec"))
	return append(allErrs, validateQuotaStatus(&rq.Status, field.NewPath("status"))...)
}

// ValidateResourceQuotaUpdate is upstream's: the spec again, and the
// scopes immutable.
func ValidateResourceQuotaUpdate(rq, old *corev1.ResourceQuota) field.ErrorList {
	allErrs := validateQuotaSpec(&rq.Spec, field.NewPath("spec"))
	a, b := slices.Clone(rq.Spec.Scopes), slices.Clone(old.Spec.Scopes)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(slices.Compact(a), slices.Compact(b)) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "scopes"), rq.Spec.Scopes, apivalidation.FieldImmutableErrorMsg))
	}
	return allErrs
}

// ValidateResourceQuotaStatusUpdate is upstream's.
func ValidateResourceQuotaStatusUpdate(rq, _ *corev1.ResourceQuota) field.ErrorList {
	var allErrs field.ErrorList
	if rq.ResourceVersion == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	return append(allErrs, validateQuotaStatus(&rq.Status, field.NewPath("status"))...)
}

func validateQuotaList(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, k := range sortedNames(list) {
		p := fldPath.Key(string(k))
		allErrs = append(allErrs, validateResourceName(k, p)...)
		allErrs = append(allErrs, validateResourceQuantityValue(k, list[k], p)...)
	}
	return allErrs
}

func validateQuotaStatus(st *corev1.ResourceQuotaStatus, fldPath *field.Path) field.ErrorList {
	return append(validateQuotaList(st.Hard, fldPath.Child("hard")), validateQuotaList(st.Used, fldPath.Child("used"))...)
}

func validateQuotaSpec(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateQuotaList(spec.Hard, fldPath.Child("hard"))
	seen := map[corev1.ResourceQuotaScope]bool{}
	for _, scope := range spec.Scopes {
		if !slices.Contains(quotaScopes, scope) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("scopes"), spec.Scopes, "unsupported scope"))
		}
		seen[scope] = true
	}
	allErrs = append(allErrs, conflicts(seen, fldPath.Child("scopes"), spec.Scopes)...)
	if spec.ScopeSelector != nil {
		sp := fldPath.Child("scopeSelector", "matchExpressions")
		inSelector := map[corev1.ResourceQuotaScope]bool{}
		for _, req := range spec.ScopeSelector.MatchExpressions {
			if !slices.Contains(quotaScopes, req.ScopeName) {
				allErrs = append(allErrs, field.Invalid(sp.Child("scopeName"), req.ScopeName, "unsupported scope"))
			}
			switch req.ScopeName {
			case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
				if req.Operator != corev1.ScopeSelectorOpExists {
					allErrs = append(allErrs, field.Invalid(sp.Child("operator"), req.Operator,
						"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
				}
			}
			switch req.Operator {
			case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
				if len(req.Values) == 0 {
					allErrs = append(allErrs, field.Required(sp.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
				}
			case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
				if len(req.Values) != 0 {
					allErrs = append(allErrs, field.Invalid(sp.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
				}
			default:
				allErrs = append(allErrs, field.Invalid(sp.Child("operator"), req.Operator, "not a valid selector operator"))
			}
			inSelector[req.ScopeName] = true
		}
		allErrs = append(allErrs, conflicts(inSelector, sp, spec.Scopes)...)
	}
	return allErrs
}

func conflicts(seen map[corev1.ResourceQuotaScope]bool, fldPath *field.Path, scopes []corev1.ResourceQuotaScope) field.ErrorList {
	var allErrs field.ErrorList
	for _, pair := range conflictingScopes {
		if seen[pair[0]] && seen[pair[1]] {
			allErrs = append(allErrs, field.Invalid(fldPath, scopes, "conflicting scopes"))
		}
	}
	return allErrs
}

// ValidateTolerations is upstream's ValidateTolerations, for the kinds of
// other groups that carry tolerations (RuntimeClass).
func ValidateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	return validateTolerations(tolerations, fldPath)
}

// ValidateResourceRequirements is upstream's container resource
// requirements validation, for the kinds of other groups that carry them
// (RuntimeClass overhead).
func ValidateResourceRequirements(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	return validateResourceRequirements(r, fldPath)
}
