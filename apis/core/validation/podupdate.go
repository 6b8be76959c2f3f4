package validation

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields is what ValidatePodUpdate's message lists, in
// upstream's words.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// ValidatePodUpdate checks an update of a pod's metadata and spec, as
// upstream's ValidatePodUpdate: the new pod must be valid, metadata keeps its
// immutable fields, the mirror-pod annotation may not be added, changed or
// removed, and the spec may change only in container images, a lowered
// activeDeadlineSeconds, added tolerations (or changed tolerationSeconds),
// removed scheduling gates, and terminationGracePeriodSeconds going from
// negative to 1. Any other spec change is one Forbidden error on "spec"
// whose message lists what may change, followed by a diff.
//
// Left out: in-place resize of container resources (upstream does that
// through the resize subresource) and the nodeSelector/affinity additions
// allowed on pods with scheduling gates.
func ValidatePodUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	allErrs = append(allErrs, validatePodMetadataAndSpec(newPod)...)
	allErrs = append(allErrs, validatePodAnnotationUpdates(newPod, oldPod, metaPath.Child("annotations"))...)
	specPath := field.NewPath("spec")

	errs, stop := validateContainerUpdates(newPod.Spec.Containers, oldPod.Spec.Containers, specPath.Child("containers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}
	errs, stop = validateContainerUpdates(newPod.Spec.InitContainers, oldPod.Spec.InitContainers, specPath.Child("initContainers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}

	// activeDeadlineSeconds may be set from nil, or lowered, never raised
	// or removed.
	deadlinePath := specPath.Child("activeDeadlineSeconds")
	if newPod.Spec.ActiveDeadlineSeconds != nil {
		v := *newPod.Spec.ActiveDeadlineSeconds
		if v < 0 || v > math.MaxInt32 {
			return append(allErrs, field.Invalid(deadlinePath, v, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if old := oldPod.Spec.ActiveDeadlineSeconds; old != nil && *old < v {
			return append(allErrs, field.Invalid(deadlinePath, v, "must be less than or equal to previous value"))
		}
	} else if oldPod.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Invalid(deadlinePath, newPod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}

	allErrs = append(allErrs, validateOnlyAddedTolerations(newPod.Spec.Tolerations, oldPod.Spec.Tolerations, specPath.Child("tolerations"))...)
	allErrs = append(allErrs, validateOnlyDeletedSchedulingGates(newPod.Spec.SchedulingGates, oldPod.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)

	if equality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		return allErrs
	}
	// Put the old values back into the updatable fields; whatever still
	// differs was not allowed to change.
	munged := *newPod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldPod.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldPod.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = oldPod.Spec.ActiveDeadlineSeconds
	munged.SchedulingGates = oldPod.Spec.SchedulingGates
	munged.Tolerations = oldPod.Spec.Tolerations
	if old := oldPod.Spec.TerminationGracePeriodSeconds; old != nil && *old < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = old
	}
	if !equality.Semantic.DeepEqual(munged, oldPod.Spec) {
		diff := cmp.Diff(oldPod.Spec, munged)
		allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v", strings.Join(updatablePodSpecFields, ","), diff)))
	}
	return allErrs
}

// validateContainerUpdates: the set of containers is fixed; images must
// stay set. stop means the rest of the spec comparison is meaningless.
func validateContainerUpdates(newContainers, oldContainers []corev1.Container, fldPath *field.Path) (field.ErrorList, bool) {
	if len(newContainers) != len(oldContainers) {
		return field.ErrorList{field.Forbidden(fldPath, "pod updates may not add or remove containers")}, true
	}
	var allErrs field.ErrorList
	for i, ctr := range newContainers {
		if ctr.Image == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("image"), ""))
		}
		if len(strings.TrimSpace(ctr.Image)) != len(ctr.Image) {
			allErrs = append(allErrs, field.Invalid(fldPath.Index(i).Child("image"), ctr.Image, "must not have leading or trailing whitespace"))
		}
	}
	return allErrs, false
}

func validateOnlyDeletedSchedulingGates(newGates, oldGates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	if len(newGates) == 0 {
		return nil
	}
	old := map[string]bool{}
	for _, g := range oldGates {
		old[g.Name] = true
	}
	var allErrs field.ErrorList
	for i, g := range newGates {
		if !old[g.Name] {
			allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("name"), "only deletion is allowed, but found new scheduling gate '"+g.Name+"'"))
		}
	}
	return allErrs
}

// validatePodAnnotations holds upstream's pod-specific annotation rules
// that matter here: a mirror pod must name its node, and the deletion cost
// is a 32-bit integer in canonical form.
func validatePodAnnotations(pod *corev1.Pod, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if v := pod.Annotations[corev1.MirrorPodAnnotationKey]; v != "" && pod.Spec.NodeName == "" {
		allErrs = append(allErrs, field.Invalid(fldPath.Key(corev1.MirrorPodAnnotationKey), v, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if v, ok := pod.Annotations[corev1.PodDeletionCost]; ok && !isDeletionCost(v) {
		allErrs = append(allErrs, field.Invalid(fldPath.Key(corev1.PodDeletionCost), v, "must be a 32bit integer"))
	}
	return allErrs
}

// isDeletionCost: an int32 without a plus sign or leading zeros.
func isDeletionCost(v string) bool {
	if v == "" || v[0] == '+' || (v[0] == '0' && v != "0") {
		return false
	}
	_, err := strconv.ParseInt(v, 10, 32)
	return err == nil
}

// validatePodAnnotationUpdates: the mirror-pod annotation is fixed for the
// life of a pod, so that a mirror pod cannot become a normal pod or back.
func validatePodAnnotationUpdates(newPod, oldPod *corev1.Pod, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	key := corev1.MirrorPodAnnotationKey
	oldVal, hadOld := oldPod.Annotations[key]
	newVal, hasNew := newPod.Annotations[key]
	switch {
	case hadOld && (!hasNew || newVal != oldVal):
		allErrs = append(allErrs, field.Forbidden(fldPath.Key(key), "may not remove or update mirror pod annotation"))
	case !hadOld && hasNew:
		allErrs = append(allErrs, field.Forbidden(fldPath.Key(key), "may not add mirror pod annotation"))
	}
	return allErrs
}

// ValidatePodStatusUpdate checks a write to the status subresource, as
// upstream: metadata keeps its immutable fields, spec.nodeName may not
// change through it, nor may status.qosClass, condition types are qualified names, a container that
// terminated may not come back unless the restart policy allows it, and pod
// IPs and host IPs are valid (at most one per family, no duplicates,
// hostIP the first host IP).
//
// Left out: resource claim statuses, allocated resources and container
// user status checks.
func ValidatePodStatusUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apivalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	allErrs = append(allErrs, validatePodAnnotationUpdates(newPod, oldPod, metaPath.Child("annotations"))...)
	allErrs = append(allErrs, validatePodAnnotations(newPod, metaPath.Child("annotations"))...)
	// Upstream reports conditions under "metadata.conditions".
	allErrs = append(allErrs, validatePodConditions(newPod.Status.Conditions, metaPath.Child("conditions"))...)

	statusPath := field.NewPath("status")
	if newPod.Spec.NodeName != oldPod.Spec.NodeName {
		allErrs = append(allErrs, field.Forbidden(statusPath.Child("nodeName"), "may not be changed directly"))
	}
	if n := newPod.Status.NominatedNodeName; n != oldPod.Status.NominatedNodeName && n != "" {
		allErrs = append(allErrs, nameErrors(ValidateNodeName, n, statusPath.Child("nominatedNodeName"))...)
	}
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(newPod.Status.QOSClass, oldPod.Status.QOSClass, statusPath.Child("qosClass"))...)
	allErrs = append(allErrs, validateContainerStateTransition(newPod.Status.ContainerStatuses, oldPod.Status.ContainerStatuses, statusPath.Child("containerStatuses"), oldPod.Spec.RestartPolicy)...)
	allErrs = append(allErrs, validateInitContainerStateTransition(newPod.Status.InitContainerStatuses, oldPod.Status.InitContainerStatuses, statusPath.Child("initContainerStatuses"), &oldPod.Spec)...)
	// The agent never restarts ephemeral containers.
	allErrs = append(allErrs, validateContainerStateTransition(newPod.Status.EphemeralContainerStatuses, oldPod.Status.EphemeralContainerStatuses, statusPath.Child("ephemeralContainerStatuses"), corev1.RestartPolicyNever)...)
	allErrs = append(allErrs, validatePodIPs(newPod)...)
	allErrs = append(allErrs, validateHostIPs(newPod)...)
	return allErrs
}

func validatePodConditions(conditions []corev1.PodCondition, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, c := range conditions {
		switch c.Type {
		case corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized:
			continue
		}
		allErrs = append(allErrs, validateQualifiedName(string(c.Type), fldPath.Index(i).Child("Type"))...)
	}
	return allErrs
}

func validateContainerStateTransition(newStatuses, oldStatuses []corev1.ContainerStatus, fldPath *field.Path, policy corev1.RestartPolicy) field.ErrorList {
	if policy == corev1.RestartPolicyAlways {
		return nil
	}
	var allErrs field.ErrorList
	for i, old := range oldStatuses {
		if old.State.Terminated == nil {
			continue
		}
		if old.State.Terminated.ExitCode != 0 && policy == corev1.RestartPolicyOnFailure {
			continue
		}
		for _, s := range newStatuses {
			if s.Name == old.Name && s.State.Terminated == nil {
				allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return allErrs
}

// validateInitContainerStateTransition: as for regular containers, except
// that restartable (sidecar) init containers may always restart.
func validateInitContainerStateTransition(newStatuses, oldStatuses []corev1.ContainerStatus, fldPath *field.Path, spec *corev1.PodSpec) field.ErrorList {
	if spec.RestartPolicy == corev1.RestartPolicyAlways {
		return nil
	}
	sidecars := map[string]bool{}
	for _, c := range spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	var allErrs field.ErrorList
	for i, old := range oldStatuses {
		if sidecars[old.Name] || old.State.Terminated == nil {
			continue
		}
		if old.State.Terminated.ExitCode != 0 && spec.RestartPolicy == corev1.RestartPolicyOnFailure {
			continue
		}
		for _, s := range newStatuses {
			if s.Name == old.Name && s.State.Terminated == nil {
				allErrs = append(allErrs, field.Forbidden(fldPath.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return allErrs
}

// validatePodIPs: each pod IP valid, no duplicates, at most one per
// family.
func validatePodIPs(pod *corev1.Pod) field.ErrorList {
	ips := make([]string, len(pod.Status.PodIPs))
	for i, ip := range pod.Status.PodIPs {
		ips[i] = ip.IP
	}
	return validateIPList(ips, pod.Status.PodIPs, field.NewPath("status", "podIPs"))
}

// validateHostIPs: as validatePodIPs, and hostIP is the first of them.
func validateHostIPs(pod *corev1.Pod) field.ErrorList {
	if len(pod.Status.HostIPs) == 0 {
		return nil
	}
	ipsPath := field.NewPath("status", "hostIPs")
	var allErrs field.ErrorList
	if pod.Status.HostIP != pod.Status.HostIPs[0].IP {
		allErrs = append(allErrs, field.Invalid(ipsPath.Index(0).Child("ip"), pod.Status.HostIPs[0].IP, "must be equal to `hostIP`"))
	}
	ips := make([]string, len(pod.Status.HostIPs))
	for i, ip := range pod.Status.HostIPs {
		ips[i] = ip.IP
	}
	return append(allErrs, validateIPList(ips, pod.Status.HostIPs, ipsPath)...)
}

// validateIPList holds what pod IPs and host IPs share. list is the field's
// value, for the error.
func validateIPList(ips []string, list any, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	valid := true
	for i, ip := range ips {
		errs := validation.IsValidIP(fldPath.Index(i), ip)
		valid = valid && len(errs) == 0
		allErrs = append(allErrs, errs...)
	}
	if len(ips) < 2 {
		return allErrs
	}
	v4 := 0
	for _, ip := range ips {
		if !strings.Contains(ip, ":") {
			v4++
		}
	}
	if valid && (len(ips) > 2 || v4 != 1) {
		allErrs = append(allErrs, field.Invalid(fldPath, list, "may specify no more than one IP for each IP family"))
	}
	seen := map[string]bool{}
	for i, ip := range ips {
		if seen[ip] {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), ip))
		}
		seen[ip] = true
	}
	return allErrs
}

// ValidatePodBinding checks a Binding posted to pods/binding: the target
// is a Node (or kind left empty) and has a name.
func ValidatePodBinding(binding *corev1.Binding) field.ErrorList {
	var allErrs field.ErrorList
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("target", "kind"), binding.Target.Kind, []string{"Node", "<empty>"}))
	}
	if binding.Target.Name == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("target", "name"), ""))
	}
	return allErrs
}
