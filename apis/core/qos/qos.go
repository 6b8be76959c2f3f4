// Package qos is a pod's quality-of-service class, as upstream 1.37
// decides it (pkg/apis/core/helper/qos, the same rule as the kubelet's
// pkg/apis/core/v1/helper/qos): the one rule the registry (status.qosClass
// on create, resize validation, quota scopes) and the node agent (status,
// the pod cgroup, OOM scores) share.
package qos

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// GetPodQOS is the class the pod was given at creation (status.qosClass),
// else ComputePodQOS: a pod's class never changes once set, which is what
// the kubelet sizes its cgroup and OOM scores by.
func GetPodQOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputePodQOS(pod)
}

// ComputePodQOS is the pod's class from its spec, as upstream's
// ComputePodQOS with PodLevelResources and
// PodLevelResourcesFixKubeletQOSClass (both on in 1.37):
//
//   - Pod-level resources naming a resource of their own (cpu, memory,
//     hugepages-*) decide alone; an empty spec.resources does not.
//   - Otherwise each container (init containers too, sidecars or not) has
//     a class of its own and the pod is that class when all agree,
//     else Burstable.
//
// A set of requirements is BestEffort when it names nothing at all, else
// its class is that of cpu and memory taken apart: a resource whose
// request equals its limit is Guaranteed when they are not zero and
// BestEffort when both are zero (or absent: an absent quantity is zero, so
// an explicit "0" is the same as none), and Burstable when they differ.
// cpu and memory of different classes make Burstable. A request is
// compared as written: the API defaulted a missing request from its limit
// before (SetDefaults_Pod), so a limit with no request, which only an
// undefaulted pod has, is Burstable here as upstream.
func ComputePodQOS(pod *v1.Pod) v1.PodQOSClass {
	if podLevelResourcesSet(pod) {
		return requirementsQOS(pod.Spec.Resources)
	}
	var class v1.PodQOSClass
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			c := requirementsQOS(&cs[i].Resources)
			switch {
			case c == v1.PodQOSBurstable:
				return c
			case class == "":
				class = c
			case class != c:
				return v1.PodQOSBurstable
			}
		}
	}
	if class == "" {
		return v1.PodQOSBestEffort
	}
	return class
}

// requirementsQOS is the class of one set of requirements.
func requirementsQOS(r *v1.ResourceRequirements) v1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return v1.PodQOSBestEffort
	}
	cpu, mem := resourceQOS(r, v1.ResourceCPU), resourceQOS(r, v1.ResourceMemory)
	if cpu != mem {
		return v1.PodQOSBurstable
	}
	return cpu
}

// resourceQOS is the class of one resource of r.
func resourceQOS(r *v1.ResourceRequirements, name v1.ResourceName) v1.PodQOSClass {
	req, lim := r.Requests[name], r.Limits[name]
	switch {
	case !req.Equal(lim):
		return v1.PodQOSBurstable
	case req.IsZero():
		return v1.PodQOSBestEffort
	}
	return v1.PodQOSGuaranteed
}

// podLevelResourcesSet is upstream's IsPodLevelResourcesSet: spec.resources
// names cpu, memory or a huge page size.
func podLevelResourcesSet(pod *v1.Pod) bool {
	r := pod.Spec.Resources
	if r == nil {
		return false
	}
	for _, l := range []v1.ResourceList{r.Requests, r.Limits} {
		for name := range l {
			if PodLevelResource(name) {
				return true
			}
		}
	}
	return false
}

// PodLevelResource says that spec.resources may name the resource
// (upstream's IsSupportedPodLevelResource).
func PodLevelResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}
