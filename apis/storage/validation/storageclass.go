// Package validation checks storage.k8s.io/v1 objects as upstream's
// pkg/apis/storage/validation does, with its field paths and messages.
package validation

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	maxProvisionerParameterSize = 256 * (1 << 10) // 256 kB
	maxProvisionerParameterLen  = 512
)

// ValidateStorageClass checks a StorageClass on create.
func ValidateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&sc.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateProvisioner(sc.Provisioner, field.NewPath("provisioner"))...)
	allErrs = append(allErrs, validateParameters(sc.Parameters, field.NewPath("parameters"))...)
	allErrs = append(allErrs, validateReclaimPolicy(sc.ReclaimPolicy, field.NewPath("reclaimPolicy"))...)
	allErrs = append(allErrs, validateVolumeBindingMode(sc.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
	return append(allErrs, validateAllowedTopologies(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
}

// ValidateStorageClassUpdate keeps parameters, provisioner, reclaim
// policy and binding mode immutable. (Upstream does not validate the rest
// again on update.)
func ValidateStorageClassUpdate(sc, old *storagev1.StorageClass) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&sc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(sc.Parameters, old.Parameters, field.NewPath("parameters"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(sc.Provisioner, old.Provisioner, field.NewPath("provisioner"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(sc.ReclaimPolicy, old.ReclaimPolicy, field.NewPath("reclaimPolicy"))...)
	return append(allErrs, apivalidation.ValidateImmutableField(sc.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
}

func validateProvisioner(provisioner string, fldPath *field.Path) field.ErrorList {
	if provisioner == "" {
		return field.ErrorList{field.Required(fldPath, provisioner)}
	}
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(strings.ToLower(provisioner)) {
		allErrs = append(allErrs, field.Invalid(fldPath, strings.ToLower(provisioner), msg))
	}
	return allErrs
}

func validateParameters(params map[string]string, fldPath *field.Path) field.ErrorList {
	if len(params) > maxProvisionerParameterLen {
		return field.ErrorList{field.TooLong(fldPath, "", maxProvisionerParameterLen)}
	}
	var allErrs field.ErrorList
	total := 0
	for k, v := range params {
		if k == "" {
			allErrs = append(allErrs, field.Invalid(fldPath, k, "field can not be empty."))
		}
		total += len(k) + len(v)
	}
	if total > maxProvisionerParameterSize {
		allErrs = append(allErrs, field.TooLong(fldPath, "", maxProvisionerParameterSize))
	}
	return allErrs
}

func validateReclaimPolicy(p *corev1.PersistentVolumeReclaimPolicy, fldPath *field.Path) field.ErrorList {
	supported := []corev1.PersistentVolumeReclaimPolicy{corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain}
	if p == nil || *p == "" || slices.Contains(supported, *p) {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, *p, supported)}
}

func validateVolumeBindingMode(mode *storagev1.VolumeBindingMode, fldPath *field.Path) field.ErrorList {
	supported := []storagev1.VolumeBindingMode{storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer}
	switch {
	case mode == nil:
		return field.ErrorList{field.Required(fldPath, "")}
	case !slices.Contains(supported, *mode):
		return field.ErrorList{field.NotSupported(fldPath, *mode, supported)}
	}
	return nil
}

// validateAllowedTopologies is upstream's: each term's expressions valid,
// no key twice in a term, no term twice.
func validateAllowedTopologies(terms []corev1.TopologySelectorTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	var seen []map[string][]string
	for i, term := range terms {
		idxPath := fldPath.Index(i)
		exprs := map[string][]string{}
		exprPath := idxPath.Child("matchLabelExpressions")
		for j, rq := range term.MatchLabelExpressions {
			p := exprPath.Index(j)
			values := map[string]bool{}
			if len(rq.Values) == 0 {
				allErrs = append(allErrs, field.Required(p.Child("values"), ""))
			}
			for k, v := range rq.Values {
				if values[v] {
					allErrs = append(allErrs, field.Duplicate(p.Child("values").Index(k), v))
				}
				values[v] = true
			}
			allErrs = append(allErrs, metavalidation.ValidateLabelName(rq.Key, p.Child("key"))...)
			if _, dup := exprs[rq.Key]; dup {
				allErrs = append(allErrs, field.Duplicate(p.Child("key"), rq.Key))
			}
			exprs[rq.Key] = slices.Sorted(maps.Keys(values))
		}
		for _, t := range seen {
			if apiequality.Semantic.DeepEqual(exprs, t) {
				allErrs = append(allErrs, field.Duplicate(exprPath, ""))
			}
		}
		seen = append(seen, exprs)
	}
	return allErrs
}
