package validation

import (
	"fmt"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kite-project/kite/apis/core/qos"
)

// ValidatePodEphemeralContainersUpdate checks a write to the
// pods/ephemeralcontainers subresource, as upstream's function of that
// name: the pod stays valid (which checks the ephemeral containers' own
// rules: unique names across every container, an existing target, none of
// ports, resources, probes, lifecycle), metadata keeps its immutable
// fields, a static pod takes none, and ephemeral containers may be added
// but never removed or changed. newPod and oldPod differ only in their
// ephemeral containers (the subresource's PrepareForUpdate).
func ValidatePodEphemeralContainersUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	allErrs = append(allErrs, validatePodMetadataAndSpec(newPod)...)
	allErrs = append(allErrs, validatePodAnnotationUpdates(newPod, oldPod, metaPath.Child("annotations"))...)

	// Static pods do not support ephemeral containers (kubernetes#113935).
	if _, ok := oldPod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}

	// A patch does not keep their order, so each is checked by name.
	specPath := field.NewPath("spec").Child("ephemeralContainers")
	byName := make(map[string]*corev1.EphemeralContainer, len(newPod.Spec.EphemeralContainers))
	for i := range newPod.Spec.EphemeralContainers {
		byName[newPod.Spec.EphemeralContainers[i].Name] = &newPod.Spec.EphemeralContainers[i]
	}
	for _, old := range oldPod.Spec.EphemeralContainers {
		if n, ok := byName[old.Name]; !ok {
			allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", old.Name)))
		} else if !equality.Semantic.DeepEqual(old, *n) {
			allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", old.Name, cmp.Diff(old, *n))))
		}
	}
	return allErrs
}

// ValidatePodResize checks a write to the pods/resize subresource, as
// upstream's ValidatePodResize with 1.37's gates (in-place resize and its
// init-container part GA; memory-backed volumes alpha, off): the pod stays
// valid, a static or Windows pod is not resized, the QoS class does not
// change, a pod whose running containers report no resources (a node
// without resize) is not resized, containers are neither added, removed,
// renamed nor reordered, requests and limits are not removed, and only
// cpu and memory requests and limits (and resizePolicy) change.
//
// Pod-level resources (spec.resources) resize as 1.37 has them by default
// (InPlacePodLevelResourcesVerticalScaling beta, on): they may not be
// removed, nor their requests or limits, and only their cpu and memory
// change. Left out: the check of pod-level resources against DRA claims
// (DRANodeAllocatableResources, alpha, off).
func ValidatePodResize(newPod, oldPod *corev1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	allErrs = append(allErrs, validatePodMetadataAndSpec(newPod)...)

	if _, ok := oldPod.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if oldPod.Spec.OS != nil && oldPod.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}

	specPath := field.NewPath("spec")
	oldQOS := oldPod.Status.QOSClass
	if oldQOS == "" {
		oldQOS = qos.ComputePodQOS(oldPod)
	}
	if oldQOS != qos.ComputePodQOS(newPod) {
		allErrs = append(allErrs, field.Invalid(specPath, newPod.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !resizeSupported(oldPod) {
		allErrs = append(allErrs, field.Forbidden(specPath, "Pod running on node without support for resize"))
	}
	// munged is the new spec with the old cpu and memory put back;
	// whatever still differs may not change on resize.
	munged := newPod.Spec.DeepCopy()
	if podLevelResourcesSet(oldPod) || podLevelResourcesSet(newPod) {
		allErrs = append(allErrs, validatePodLevelResize(newPod, oldPod, munged, specPath)...)
	}

	if errs := validateResizeContainerOrdering(newPod, oldPod, specPath); len(errs) > 0 {
		return append(allErrs, errs...)
	}
	for i := range oldPod.Spec.InitContainers {
		allErrs = append(allErrs, validateContainerResize(&newPod.Spec.InitContainers[i].Resources, &oldPod.Spec.InitContainers[i].Resources,
			specPath.Child("initContainers").Index(i).Child("resources"))...)
	}
	for i := range oldPod.Spec.Containers {
		allErrs = append(allErrs, validateContainerResize(&newPod.Spec.Containers[i].Resources, &oldPod.Spec.Containers[i].Resources,
			specPath.Child("containers").Index(i).Child("resources"))...)
	}

	for i := range munged.Containers {
		c := &munged.Containers[i]
		keepOldCPUMemory(c, &oldPod.Spec.Containers[i])
		if !equality.Semantic.DeepEqual(*c, oldPod.Spec.Containers[i]) {
			allErrs = append(allErrs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
		}
	}
	for i := range munged.InitContainers {
		c := &munged.InitContainers[i]
		modified := !equality.Semantic.DeepEqual(*c, oldPod.Spec.InitContainers[i])
		keepOldCPUMemory(c, &oldPod.Spec.InitContainers[i])
		if !equality.Semantic.DeepEqual(*c, oldPod.Spec.InitContainers[i]) {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("initContainers").Index(i), "only cpu and memory resources for init or sidecar containers are mutable"))
		}
		if modified && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
			for _, p := range c.ResizePolicy {
				if p.RestartPolicy == corev1.RestartContainer {
					allErrs = append(allErrs, field.Forbidden(specPath.Child("initContainers").Index(i), "non-sidecar init containers with a resize policy of RestartContainer cannot be resized"))
				}
			}
		}
	}
	if !equality.Semantic.DeepEqual(newPod.Spec.Volumes, oldPod.Spec.Volumes) {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("volumes"), "volumes are immutable on resize when InPlacePodVerticalScalingMemoryBackedVolumes feature gate is disabled"))
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	if !equality.Semantic.DeepEqual(*munged, oldPod.Spec) {
		allErrs = append(allErrs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
	}
	return allErrs
}

func podLevelResourcesSet(pod *corev1.Pod) bool {
	r := pod.Spec.Resources
	return r != nil && len(r.Requests)+len(r.Limits) > 0
}

// validatePodLevelResize is upstream's validatePodLevelResourcesResize:
// pod-level resources, their requests and their limits may not be
// removed, and only cpu and memory change. It puts the old cpu and
// memory back into munged's pod-level resources, for the final check
// that nothing else changed.
func validatePodLevelResize(newPod, oldPod *corev1.Pod, munged *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if oldPod.Spec.Resources != nil && newPod.Spec.Resources == nil {
		return field.ErrorList{field.Forbidden(specPath.Child("resources"), "pod-level resources cannot be removed")}
	}
	if old := oldPod.Spec.Resources; old != nil {
		if resourcesRemoved(newPod.Spec.Resources.Requests, old.Requests) {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("resources").Child("requests"), "pod-level resource requests cannot be removed"))
		}
		if resourcesRemoved(newPod.Spec.Resources.Limits, old.Limits) {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("resources").Child("limits"), "pod-level resource limits cannot be removed"))
		}
	}
	if r := munged.Resources; r != nil {
		var oldReqs, oldLims corev1.ResourceList
		if oldPod.Spec.Resources != nil {
			oldReqs, oldLims = oldPod.Spec.Resources.Requests, oldPod.Spec.Resources.Limits
		}
		r.Requests = keepOldCPUMemoryOf(r.Requests, oldReqs)
		r.Limits = keepOldCPUMemoryOf(r.Limits, oldLims)
		// Pod-level resources added by the resize with nothing but cpu
		// and memory are none once those are put back (upstream sets the
		// block to nil then).
		if oldPod.Spec.Resources == nil && len(r.Requests) == 0 && len(r.Limits) == 0 && len(r.Claims) == 0 {
			munged.Resources = nil
		}
	}
	if !equality.Semantic.DeepEqual(munged.Resources, oldPod.Spec.Resources) {
		allErrs = append(allErrs, field.Forbidden(specPath, "only cpu and memory resources are mutable at pod-level"))
	}
	return allErrs
}

// resizeSupported is upstream's isPodResizeRequestSupported: a node that
// resizes reports the resources of running containers; one that does not
// (an older kubelet) leaves them out. With nothing running, it cannot be
// told, and the resize is allowed.
func resizeSupported(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Running != nil {
			return c.Resources != nil
		}
	}
	return true
}

func validateResizeContainerOrdering(newPod, oldPod *corev1.Pod, specPath *field.Path) field.ErrorList {
	allErrs := validateResizeSameContainers(newPod.Spec.Containers, oldPod.Spec.Containers, specPath.Child("containers"), "containers")
	return append(allErrs, validateResizeSameContainers(newPod.Spec.InitContainers, oldPod.Spec.InitContainers, specPath.Child("initContainers"), "initContainers")...)
}

// validateResizeSameContainers: a resize keeps the containers of a list
// (kind: "containers", "initContainers"), their number, order and names.
func validateResizeSameContainers(containers, old []corev1.Container, fldPath *field.Path, kind string) field.ErrorList {
	if len(containers) != len(old) {
		return field.ErrorList{field.Forbidden(fldPath, kind+" may not be added or removed on resize")}
	}
	var allErrs field.ErrorList
	for i := range old {
		if containers[i].Name != old[i].Name {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("name"), kind+" may not be renamed or reordered on resize"))
		}
	}
	return allErrs
}

func validateContainerResize(newReq, oldReq *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if resourcesRemoved(newReq.Requests, oldReq.Requests) {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("requests"), "resource requests cannot be removed"))
	}
	if resourcesRemoved(newReq.Limits, oldReq.Limits) {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("limits"), "resource limits cannot be removed"))
	}
	return allErrs
}

func resourcesRemoved(list, old corev1.ResourceList) bool {
	for name := range old {
		if _, ok := list[name]; !ok {
			return true
		}
	}
	return false
}

// keepOldCPUMemory sets c's cpu and memory requests and limits to old's
// (upstream's dropCPUMemoryResourcesFromContainer); claims stay c's.
func keepOldCPUMemory(c, old *corev1.Container) {
	c.Resources.Limits = keepOldCPUMemoryOf(c.Resources.Limits, old.Resources.Limits)
	c.Resources.Requests = keepOldCPUMemoryOf(c.Resources.Requests, old.Resources.Requests)
}

func keepOldCPUMemoryOf(list, old corev1.ResourceList) corev1.ResourceList {
	if list == nil && old == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for k, v := range list {
		out[k] = v
	}
	delete(out, corev1.ResourceCPU)
	delete(out, corev1.ResourceMemory)
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := old[n]; ok {
			out[n] = q
		}
	}
	return out
}
