package builtin

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/storage/intern"
)

// InternPod shares, through t, the parts of a cached pod that pods of one
// template have in common beyond their metadata: resource lists, images,
// environment, ports, the scheduling names and the enumerated strings
// (policies, phase, condition types), each of which decoding allocates
// anew per pod. A pod's containers' two resource lists alone are ~1.4 KB
// decoded.
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
	spec.RestartPolicy = v1.RestartPolicy(t.String(string(spec.RestartPolicy)))
	spec.DNSPolicy = v1.DNSPolicy(t.String(string(spec.DNSPolicy)))
	spec.PriorityClassName = t.String(spec.PriorityClassName)
	spec.TerminationGracePeriodSeconds = intern.Pointer(t, spec.TerminationGracePeriodSeconds)
	spec.Priority = intern.Pointer(t, spec.Priority)
	spec.EnableServiceLinks = intern.Pointer(t, spec.EnableServiceLinks)
	spec.PreemptionPolicy = intern.Pointer(t, spec.PreemptionPolicy)
	if spec.Resources != nil {
		internResources(t, spec.Resources)
	}
	internStatus(t, &pod.Status)
}

func internStatus(t *intern.Table, st *v1.PodStatus) {
	st.Phase = v1.PodPhase(t.String(string(st.Phase)))
	st.QOSClass = v1.PodQOSClass(t.String(string(st.QOSClass)))
	st.HostIP = t.String(st.HostIP) // one per node
	st.HostIPs = intern.Slice(t, st.HostIPs, func(key []byte, ip v1.HostIP) []byte { return intern.AppendField(key, ip.IP) })
	// A pod's IP is its own, but decoding gives PodIPs[0] a second copy.
	for i := range st.PodIPs {
		if st.PodIPs[i].IP == st.PodIP {
			st.PodIPs[i].IP = st.PodIP
		}
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type = v1.PodConditionType(t.String(string(c.Type)))
		c.Status = v1.ConditionStatus(t.String(string(c.Status)))
		c.Reason = t.String(c.Reason)
	}
	for _, statuses := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range statuses {
			s := &statuses[i]
			s.Name = t.String(s.Name)
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
	c.Name = t.String(c.Name)
	c.Image = t.String(c.Image)
	c.TerminationMessagePath = t.String(c.TerminationMessagePath)
	c.TerminationMessagePolicy = v1.TerminationMessagePolicy(t.String(string(c.TerminationMessagePolicy)))
	c.ImagePullPolicy = v1.PullPolicy(t.String(string(c.ImagePullPolicy)))
	c.Ports = intern.Slice(t, c.Ports, appendPortKey)
	if envByValue(c.Env) {
		c.Env = intern.Slice(t, c.Env, func(key []byte, e v1.EnvVar) []byte {
			return intern.AppendField(intern.AppendField(key, e.Name), e.Value)
		})
	} else {
		for i := range c.Env {
			c.Env[i].Name = t.String(c.Env[i].Name)
			c.Env[i].Value = t.String(c.Env[i].Value)
		}
	}
	internResources(t, &c.Resources)
}

// envByValue reports whether env's variables are all plain values: those
// that come from elsewhere (ValueFrom) hold a pointer, which == compares
// by address, so their lists are not shared whole.
func envByValue(env []v1.EnvVar) bool {
	for _, e := range env {
		if e.ValueFrom != nil {
			return false
		}
	}
	return true
}

func appendPortKey(key []byte, p v1.ContainerPort) []byte {
	key = intern.AppendField(key, p.Name)
	key = intern.AppendField(key, strconv.Itoa(int(p.HostPort)))
	key = intern.AppendField(key, strconv.Itoa(int(p.ContainerPort)))
	key = intern.AppendField(key, string(p.Protocol))
	return intern.AppendField(key, p.HostIP)
}

func internResources(t *intern.Table, r *v1.ResourceRequirements) {
	r.Requests = t.ResourceList(r.Requests)
	r.Limits = t.ResourceList(r.Limits)
}
