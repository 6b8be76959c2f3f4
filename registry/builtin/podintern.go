package builtin

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/storage/intern"
)

// InternPod shares, through t, the parts of a cached pod that pods of one
// template have in common beyond their metadata: resource lists, images,
// environment and the scheduling names. A pod's containers' two resource
// lists alone are ~1.4 KB decoded.
func InternPod(t *intern.Table, obj runtime.Object) {
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	spec := &pod.Spec
	for i := range spec.InitContainers {
		internContainer(t, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		internContainer(t, &spec.Containers[i])
	}
	spec.Overhead = t.ResourceList(spec.Overhead)
	spec.NodeSelector = t.Map(spec.NodeSelector)
	spec.NodeName = t.String(spec.NodeName)
	spec.SchedulerName = t.String(spec.SchedulerName)
	spec.ServiceAccountName = t.String(spec.ServiceAccountName)
	spec.DeprecatedServiceAccount = t.String(spec.DeprecatedServiceAccount)
	if spec.Resources != nil {
		internResources(t, spec.Resources)
	}
	for _, statuses := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range statuses {
			s := &statuses[i]
			s.Image = t.String(s.Image)
			s.ImageID = t.String(s.ImageID)
			s.AllocatedResources = t.ResourceList(s.AllocatedResources)
			if s.Resources != nil {
				internResources(t, s.Resources)
			}
		}
	}
}

func internContainer(t *intern.Table, c *v1.Container) {
	c.Image = t.String(c.Image)
	c.TerminationMessagePath = t.String(c.TerminationMessagePath)
	for i := range c.Env {
		c.Env[i].Name = t.String(c.Env[i].Name)
		c.Env[i].Value = t.String(c.Env[i].Value)
	}
	internResources(t, &c.Resources)
}

func internResources(t *intern.Table, r *v1.ResourceRequirements) {
	r.Requests = t.ResourceList(r.Requests)
	r.Limits = t.ResourceList(r.Limits)
}
