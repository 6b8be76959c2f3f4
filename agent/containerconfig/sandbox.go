package containerconfig

import (
	"bufio"
	"bytes"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SandboxConfig is the pod's sandbox configuration for attempt, as the
// kubelet's generatePodSandboxConfig: metadata, labels and annotations,
// the log directory, DNS, port mappings, and the Linux options (the
// namespaces (Namespaces), the pod's users and groups, privileged when a
// container is, sysctls, the pod cgroup's resources). With a pod network
// (in.PodNetwork) a pod that is not hostNetwork has a network namespace
// of its own (the runtime runs CNI for it) and its hostname (Hostname);
// otherwise it is in the node's, and, as the kubelet does for a
// hostNetwork pod, no hostname is set: the pod has the node's.
func SandboxConfig(pod *v1.Pod, in Inputs, attempt uint32) *runtimeapi.PodSandboxConfig {
	annotations := map[string]string{}
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	// The sandbox (its pause process) runs under the runtime's default
	// seccomp profile whatever the pod asks, as the kubelet's
	// (kubernetes#84623).
	sc := &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: Namespaces(pod, in.PodNetwork),
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}}
	var sysctls map[string]string
	if p := pod.Spec.SecurityContext; p != nil {
		sc.RunAsUser, sc.RunAsGroup, sc.SupplementalGroups = podIDs(p)
		for _, s := range p.Sysctls {
			if sysctls == nil {
				sysctls = map[string]string{}
			}
			sysctls[s.Name] = s.Value
		}
	}
	for _, c := range allContainers(pod) {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			sc.Privileged = true
		}
	}
	dnsConfig, _ := PodDNS(pod, in)
	hostname := ""
	if sc.NamespaceOptions.Network == runtimeapi.NamespaceMode_POD {
		hostname = Hostname(pod)
	}
	return &runtimeapi.PodSandboxConfig{
		Hostname:     hostname,
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		LogDirectory: in.LogDirectory,
		DnsConfig:    dnsConfig,
		PortMappings: portMappings(pod),
		Labels:       podLabels(pod),
		Annotations:  annotations,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: sc,
			Sysctls:         sysctls,
			Resources:       podResources(pod),
		},
	}
}

// Hostname is the hostname of a pod in a network namespace of its own, as
// the kubelet's GeneratePodHostNameAndDomain: spec.hostname or the pod's
// name, cut to 63 characters without a trailing '-' or '.'.
func Hostname(pod *v1.Pod) string {
	h := pod.Name
	if pod.Spec.Hostname != "" {
		h = pod.Spec.Hostname
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

func allContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// portMappings are the containers' host ports (kubelet's
// makePortMappings): only ports with a hostPort.
func portMappings(pod *v1.Pod) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	for _, c := range allContainers(pod) {
		for _, p := range c.Ports {
			if p.HostPort == 0 {
				continue
			}
			proto := runtimeapi.Protocol_TCP
			switch p.Protocol {
			case v1.ProtocolUDP:
				proto = runtimeapi.Protocol_UDP
			case v1.ProtocolSCTP:
				proto = runtimeapi.Protocol_SCTP
			}
			out = append(out, &runtimeapi.PortMapping{Protocol: proto, ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP})
		}
	}
	return out
}

// ParseResolvConf reads a resolv.conf: nameservers, the last search (or
// domain) line, and options, as the kubelet's parseResolvConf.
func ParseResolvConf(b []byte) *runtimeapi.DNSConfig {
	out := &runtimeapi.DNSConfig{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			out.Servers = append(out.Servers, f[1])
		case "search", "domain":
			// The same domain with and without its trailing dot counts
			// once, "." not at all, as the kubelet's parseResolvConf.
			out.Searches = nil
			for _, d := range f[1:] {
				if d != "." {
					out.Searches = append(out.Searches, strings.TrimSuffix(d, "."))
				}
			}
		case "options":
			out.Options = dnsOptions(out.Options, optionsOf(f[1:]))
		}
	}
	return out
}

func optionsOf(fields []string) []v1.PodDNSConfigOption {
	var out []v1.PodDNSConfigOption
	for _, f := range fields {
		n, v, ok := strings.Cut(f, ":")
		o := v1.PodDNSConfigOption{Name: n}
		if ok {
			o.Value = &v
		}
		out = append(out, o)
	}
	return out
}
