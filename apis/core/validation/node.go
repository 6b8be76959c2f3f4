package validation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateNode checks a node: name a DNS-1123 subdomain, no namespace,
// taints (key a label name, value a label value, effect required and known,
// unique per key and effect), capacity and allocatable quantities, and pod
// CIDRs (valid, at most one per family, no duplicates).
//
// Left out: the deprecated taints and prefer-avoid-pods annotations.
func ValidateNode(node *corev1.Node) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apivalidation.ValidateObjectMeta(&node.ObjectMeta, false, ValidateNodeName, metaPath)
	// Upstream reports taints under "metadata.taints".
	allErrs = append(allErrs, validateNodeTaints(node.Spec.Taints, metaPath.Child("taints"))...)
	allErrs = append(allErrs, validateNodeResources(node)...)
	if len(node.Spec.PodCIDRs) > 0 {
		cidrsPath := field.NewPath("spec", "podCIDRs")
		valid := true
		for i, v := range node.Spec.PodCIDRs {
			errs := validation.IsValidCIDR(cidrsPath.Index(i), v)
			valid = valid && len(errs) == 0
			allErrs = append(allErrs, errs...)
		}
		if n := len(node.Spec.PodCIDRs); n > 1 {
			v4 := 0
			for _, c := range node.Spec.PodCIDRs {
				if !strings.Contains(c, ":") {
					v4++
				}
			}
			if valid && (n > 2 || v4 != 1) {
				allErrs = append(allErrs, field.Invalid(cidrsPath, node.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
			}
			seen := map[string]bool{}
			for i, c := range node.Spec.PodCIDRs {
				if seen[c] {
					allErrs = append(allErrs, field.Duplicate(cidrsPath.Index(i), c))
				}
				seen[c] = true
			}
		}
	}
	return allErrs
}

// ValidateNodeUpdate checks an update of a node (or of nodes/status): the
// metadata update rules, resources, no duplicate addresses, pod CIDRs and
// providerID fixed once set, taints valid, externalID unchanged.
func ValidateNodeUpdate(node, old *corev1.Node) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apivalidation.ValidateObjectMetaUpdate(&node.ObjectMeta, &old.ObjectMeta, metaPath)
	allErrs = append(allErrs, validateNodeResources(node)...)
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range node.Status.Addresses {
		if seen[a] {
			allErrs = append(allErrs, field.Duplicate(field.NewPath("status", "addresses").Index(i), a))
		}
		seen[a] = true
	}
	const cidrMsg = "node updates may not change podCIDR except from \"\" to valid"
	if len(old.Spec.PodCIDRs) > 0 {
		if len(old.Spec.PodCIDRs) != len(node.Spec.PodCIDRs) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "podCIDRs"), cidrMsg))
		} else {
			for i, v := range old.Spec.PodCIDRs {
				if v != node.Spec.PodCIDRs[i] {
					allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "podCIDRs"), cidrMsg))
				}
			}
		}
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != node.Spec.ProviderID {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	allErrs = append(allErrs, validateNodeTaints(node.Spec.Taints, metaPath.Child("taints"))...)
	if node.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return allErrs
}

// validateNodeResources checks capacity and allocatable quantities. The
// paths are "status.capacity.<name>", as upstream builds them.
func validateNodeResources(node *corev1.Node) field.ErrorList {
	var allErrs field.ErrorList
	for _, name := range sortedNames(node.Status.Capacity) {
		allErrs = append(allErrs, validateResourceQuantityValue(name, node.Status.Capacity[name], field.NewPath("status", "capacity", string(name)))...)
	}
	for _, name := range sortedNames(node.Status.Allocatable) {
		allErrs = append(allErrs, validateResourceQuantityValue(name, node.Status.Allocatable[name], field.NewPath("status", "allocatable", string(name)))...)
	}
	return allErrs
}

func validateNodeTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	type keyEffect struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := map[keyEffect]bool{}
	for i, t := range taints {
		idxPath := fldPath.Index(i)
		allErrs = append(allErrs, metavalidation.ValidateLabelName(t.Key, idxPath.Child("key"))...)
		if errs := validation.IsValidLabelValue(t.Value); len(errs) != 0 {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("value"), t.Value, strings.Join(errs, ";")))
		}
		allErrs = append(allErrs, validateTaintEffect(t.Effect, false, idxPath.Child("effect"))...)
		k := keyEffect{t.Key, t.Effect}
		if seen[k] {
			dup := field.Duplicate(idxPath, t)
			dup.Detail = "taints must be unique by key and effect pair"
			allErrs = append(allErrs, dup)
			continue
		}
		seen[k] = true
	}
	return allErrs
}
