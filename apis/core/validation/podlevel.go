package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
)

// validatePodLevelResources is upstream's validatePodResources with 1.37's
// PodLevelResources (beta, on): a pod's spec.resources are not set on a
// Windows pod, claim nothing, name only the resources supported at pod
// level (cpu, memory, hugepages-*), follow the rules of container
// resources (quantities, requests at most limits), and agree with the
// containers': a pod-level request is at least the containers' aggregate
// request, a hugepage limit at least their aggregate limit, and no
// container limits more than the pod.
func validatePodLevelResources(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	r := spec.Resources
	if r == nil {
		return nil
	}
	path := fldPath.Child("resources")
	if spec.OS != nil && spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(path, "may not be set for a windows pod")}
	}
	var allErrs field.ErrorList
	if r.Claims != nil {
		allErrs = append(allErrs, field.Forbidden(path.Child("claims"), "claims may not be set for Resources at pod-level"))
	}
	allErrs = append(allErrs, validateRequirementsNamed(r, path, validatePodResourceName)...)
	return append(allErrs, validatePodResourceConsistency(spec, path)...)
}

func validatePodResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if errs := validateResourceName(name, fldPath); len(errs) > 0 {
		return errs
	}
	if !resourcehelper.IsSupportedPodLevelResource(name) {
		return field.ErrorList{field.NotSupported(fldPath, name, sets.List(resourcehelper.SupportedPodLevelResources()))}
	}
	return nil
}

// validatePodResourceConsistency is upstream's, messages and (odd) field
// paths included.
func validatePodResourceConsistency(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	pod := &corev1.Pod{Spec: *spec}
	reqPath := fldPath.Child("requests")
	ctrReqs := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedNames(ctrReqs) {
		podReq, ok := spec.Resources.Requests[name]
		if !ok {
			continue
		}
		if q := ctrReqs[name]; q.Cmp(podReq) > 0 {
			allErrs = append(allErrs, field.Invalid(reqPath.Key(string(name)), podReq.String(), fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", q.String())))
		}
	}
	ctrLims := resourcehelper.AggregateContainerLimits(pod, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedNames(ctrLims) {
		if !isHugePageResourceName(name) {
			continue
		}
		podLim, ok := spec.Resources.Limits[name]
		if !ok {
			continue
		}
		if q := ctrLims[name]; q.Cmp(podLim) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("limits").Key(string(name)), podLim.String(), fmt.Sprintf("must be greater than or equal to aggregate container limits of %s", q.String())))
		}
	}
	for i, c := range spec.Containers {
		for _, name := range sortedNames(c.Resources.Limits) {
			podLim, ok := spec.Resources.Limits[name]
			if !ok {
				continue
			}
			if q := c.Resources.Limits[name]; q.Cmp(podLim) > 0 {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("containers").Index(i).Key(string(name)).Child("limits"), q.String(), fmt.Sprintf("must be less than or equal to pod limits of %s", podLim.String())))
			}
		}
	}
	return allErrs
}
