package validation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateTolerations is upstream's ValidateTolerations.
func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range tolerations {
		idxPath := fldPath.Index(i)
		if t.Key != "" {
			allErrs = append(allErrs, metavalidation.ValidateLabelName(t.Key, idxPath.Child("key"))...)
		}
		// An empty key with operator Exists matches every taint.
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("effect"), t.Effect,
				"effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "": // empty means Equal
			if errs := validation.IsValidLabelValue(t.Value); len(errs) != 0 {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value, strings.Join(errs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			valid := []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("operator"), t.Operator, valid))
		}
		// An empty effect matches every effect.
		if t.Effect != "" {
			allErrs = append(allErrs, validateTaintEffect(t.Effect, true, idxPath.Child("effect"))...)
		}
	}
	return allErrs
}

func validateTaintEffect(effect corev1.TaintEffect, allowEmpty bool, fldPath *field.Path) field.ErrorList {
	if !allowEmpty && effect == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	switch effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	default:
		valid := []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
		return field.ErrorList{field.NotSupported(fldPath, effect, valid)}
	}
}

// validateOnlyAddedTolerations: on update, existing tolerations may only
// change their tolerationSeconds; new ones may be added.
func validateOnlyAddedTolerations(newTolerations, oldTolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, old := range oldTolerations {
		found := false
		for _, t := range newTolerations {
			candidate := old
			candidate.TolerationSeconds = t.TolerationSeconds
			if tolerationEqual(candidate, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return validateTolerations(newTolerations, fldPath)
}

func tolerationEqual(a, b corev1.Toleration) bool {
	if a.Key != b.Key || a.Operator != b.Operator || a.Value != b.Value || a.Effect != b.Effect {
		return false
	}
	if (a.TolerationSeconds == nil) != (b.TolerationSeconds == nil) {
		return false
	}
	return a.TolerationSeconds == nil || *a.TolerationSeconds == *b.TolerationSeconds
}
