package defaults

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodLevelResources completes a pod's pod-level resources (spec.resources)
// as upstream's DefaultPodLevelResources with 1.37's gates
// (PodLevelResources and PodLevelResourcesFixDefaulting beta, on), which
// the pod strategy applies on create and pods/resize on every resize: a
// pod without pod-level requests or limits is left alone; else
//   - a hugepage limit missing at pod level is the sum of the containers'
//     (unless it has a pod-level request);
//   - a cpu or memory request missing at pod level is the containers'
//     aggregate request (overcommittable resources), and any other
//     supported resource with a pod-level limit but no request gets the
//     limit as its request;
//   - a pod-level cpu or memory limit missing while every container
//     (init and ephemeral containers included) limits it is the containers' aggregate
//     limit, raised to the pod-level request when that is larger.
func PodLevelResources(pod *corev1.Pod) {
	r := pod.Spec.Resources
	if r == nil || len(r.Requests)+len(r.Limits) == 0 {
		return
	}
	// Only the containers count, as upstream's conversion of just
	// containers and init containers (ephemeral ones have no resources).
	ctrs := &corev1.Pod{Spec: corev1.PodSpec{Containers: pod.Spec.Containers, InitContainers: pod.Spec.InitContainers}}

	// Hugepage limits.
	lims := r.Limits
	if lims == nil {
		lims = corev1.ResourceList{}
	}
	for name, q := range resourcehelper.AggregateContainerLimits(ctrs, resourcehelper.PodResourcesOptions{}) {
		if !resourcehelper.IsSupportedPodLevelResource(name) || !isHugePage(name) {
			continue
		}
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if _, ok := lims[name]; !ok {
			lims[name] = q
		}
	}
	if len(lims) > 0 {
		r.Limits = lims
	}

	// Requests.
	reqs := r.Requests
	if reqs == nil {
		reqs = corev1.ResourceList{}
	}
	for name, q := range resourcehelper.AggregateContainerRequests(ctrs, resourcehelper.PodResourcesOptions{}) {
		if _, ok := reqs[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) && overcommitAllowed(name) {
			reqs[name] = q
		}
	}
	for name, q := range r.Limits {
		if _, ok := reqs[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			reqs[name] = q.DeepCopy()
		}
	}
	if len(reqs) > 0 {
		r.Requests = reqs
	}

	// Limits: candidates are the requested resources without a pod-level
	// limit that every container limits.
	var candidates []corev1.ResourceName
	for name := range r.Requests {
		if _, ok := r.Limits[name]; ok || !resourcehelper.IsSupportedPodLevelResource(name) {
			continue
		}
		// Ephemeral containers count here, as upstream's
		// VisitContainers(AllContainers): having no limits, one stops
		// the defaulting.
		all := len(pod.Spec.EphemeralContainers) == 0
		for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range cs {
				if _, ok := cs[i].Resources.Limits[name]; !ok {
					all = false
				}
			}
		}
		if all {
			candidates = append(candidates, name)
		}
	}
	if len(candidates) == 0 {
		return
	}
	agg := resourcehelper.AggregateContainerLimits(ctrs, resourcehelper.PodResourcesOptions{})
	for _, name := range candidates {
		q, ok := agg[name]
		if !ok {
			continue
		}
		if req := r.Requests[name]; req.Cmp(q) > 0 {
			q = req
		}
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[name] = q
	}
}

func isHugePage(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// overcommitAllowed is upstream's IsOvercommitAllowed: a native resource
// (no domain, or a kubernetes.io one) that is not hugepages.
func overcommitAllowed(name corev1.ResourceName) bool {
	s := string(name)
	native := !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/")
	return native && !isHugePage(name)
}
