package defaults

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// Pod applies upstream's v1 defaults to a pod: SetDefaults_Pod,
// SetDefaults_PodSpec and the defaults of every nested field (containers,
// probes, volumes, resource lists), plus the v1<->internal round trip of
// spec.serviceAccount and status.podIP(s)/hostIP(s).
func Pod(pod *corev1.Pod) {
	PodSpec(&pod.Spec)
	spec := &pod.Spec

	// Requests default to limits only on a Pod, not in a PodTemplate:
	// upstream does this in SetDefaults_Pod for that reason.
	for i := range spec.Containers {
		requestsFromLimits(&spec.Containers[i].Resources)
	}
	for i := range spec.InitContainers {
		requestsFromLimits(&spec.InitContainers[i].Resources)
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	// With host networking every container port is a host port.
	if spec.HostNetwork {
		hostNetworkPorts(spec.Containers)
		hostNetworkPorts(spec.InitContainers)
	}

	// Conversion, not defaulting, upstream: the internal PodSpec has only
	// ServiceAccountName, filled from the deprecated field when empty, and the
	// v1 output mirrors it back.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName

	podStatus(&pod.Status)
}

// PodSpec applies the defaults upstream gives every PodSpec, including the
// ones inside templates: SetDefaults_PodSpec and the nested fields.
func PodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range spec.Volumes {
		Volume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		Container(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		Container(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		c := (*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon)
		Container(c)
	}
	resourceList(spec.Overhead)
	if spec.Resources != nil {
		resourceList(spec.Resources.Limits)
		resourceList(spec.Resources.Requests)
	}
}

// Container applies SetDefaults_Container and the defaults of the
// container's ports, env, resources, probes and lifecycle handlers.
func Container(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = PullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil && from.FieldRef != nil {
			objectFieldSelector(from.FieldRef)
		}
	}
	resourceList(c.Resources.Limits)
	resourceList(c.Resources.Requests)
	probe(c.LivenessProbe)
	probe(c.ReadinessProbe)
	probe(c.StartupProbe)
	if c.Lifecycle != nil {
		lifecycleHandler(c.Lifecycle.PostStart)
		lifecycleHandler(c.Lifecycle.PreStop)
	}
}

// PullPolicyFor is the image pull policy upstream defaults for an image:
// Always when the tag is "latest" or there is neither tag nor digest (which
// means latest), IfNotPresent otherwise.
func PullPolicyFor(image string) corev1.PullPolicy {
	if imageTag(image) == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageTag returns the tag of an image reference, "latest" when it has
// neither tag nor digest, and "" when it is pinned by digest only. It follows
// the docker reference grammar upstream's parsers.ParseImageName uses: a
// colon after the last slash starts the tag (a colon before it is a
// registry port).
func imageTag(image string) string {
	name, _, hasDigest := strings.Cut(image, "@")
	slash := strings.LastIndex(name, "/")
	if colon := strings.LastIndex(name, ":"); colon > slash {
		return name[colon+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	httpGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

func lifecycleHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		httpGet(h.HTTPGet)
	}
}

func httpGet(a *corev1.HTTPGetAction) {
	if a == nil {
		return
	}
	if a.Path == "" {
		a.Path = "/"
	}
	if a.Scheme == "" {
		a.Scheme = corev1.URISchemeHTTP
	}
}

func objectFieldSelector(s *corev1.ObjectFieldSelector) {
	if s.APIVersion == "" {
		s.APIVersion = "v1"
	}
}

func requestsFromLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = make(corev1.ResourceList, len(r.Limits))
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

// resourceList rounds every quantity up to milli precision, as upstream's
// SetDefaults_ResourceList does to keep API compatibility.
func resourceList(list corev1.ResourceList) {
	const milliScale = -3
	for name, q := range list {
		q.RoundUp(resource.Scale(milliScale))
		list[name] = q
	}
}

func hostNetworkPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			p := &containers[i].Ports[j]
			if p.HostPort == 0 {
				p.HostPort = p.ContainerPort
			}
		}
	}
}

// podStatus does upstream's v1<->internal round trip of the IP fields: the
// internal status has only the plural lists, filled from the singular field
// when empty, and v1 shows the first element in the singular field.
func podStatus(s *corev1.PodStatus) {
	if len(s.PodIPs) == 0 && s.PodIP != "" {
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	if len(s.HostIPs) == 0 && s.HostIP != "" {
		s.HostIPs = []corev1.HostIP{{IP: s.HostIP}}
	}
	if len(s.HostIPs) > 0 {
		s.HostIP = s.HostIPs[0].IP
	}
	for _, statuses := range [][]corev1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range statuses {
			resourceList(statuses[i].AllocatedResources)
			if r := statuses[i].Resources; r != nil {
				resourceList(r.Limits)
				resourceList(r.Requests)
			}
		}
	}
}
