package containerconfig

import (
	"cmp"
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceEnv are the variables that tell a container of a pod in
// namespace where the Services are, as the kubelet's getServiceEnvVarMap
// and envvars.FromServices: for each Service with a cluster IP, of the
// pod's namespace when enableServiceLinks (the default), and always the
// kubernetes Service of default (rest.InClusterConfig reads
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT),
// <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT (the first port),
// <NAME>_SERVICE_PORT_<PORT> per named port, and Docker's link variables
// <NAME>_PORT, <NAME>_PORT_<port>_<PROTO>{,_PROTO,_PORT,_ADDR}. NAME is
// the Service's name in upper case with '-' as '_'. A Service of the
// pod's namespace named kubernetes wins over default's. Services are
// taken by name, so the order is stable.
func ServiceEnv(namespace string, enableServiceLinks bool, services []*v1.Service) []EnvVar {
	byName := map[string]*v1.Service{}
	for _, s := range services {
		if !hasClusterIP(s) {
			continue
		}
		switch {
		case s.Namespace == namespace && enableServiceLinks:
			byName[s.Name] = s
		case s.Namespace == metav1.NamespaceDefault && s.Name == "kubernetes":
			if _, ok := byName[s.Name]; !ok {
				byName[s.Name] = s
			}
		}
	}
	picked := make([]*v1.Service, 0, len(byName))
	for _, s := range byName {
		picked = append(picked, s)
	}
	slices.SortFunc(picked, func(a, b *v1.Service) int { return cmp.Compare(a.Name, b.Name) })
	var out []EnvVar
	for _, s := range picked {
		prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
		ip := s.Spec.ClusterIP
		out = append(out, EnvVar{prefix + "_SERVICE_HOST", ip}, EnvVar{prefix + "_SERVICE_PORT", strconv.Itoa(int(s.Spec.Ports[0].Port))})
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				out = append(out, EnvVar{prefix + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), strconv.Itoa(int(p.Port))})
			}
		}
		for i, p := range s.Spec.Ports {
			proto := string(cmp.Or(p.Protocol, v1.ProtocolTCP))
			url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, strconv.Itoa(int(p.Port)))
			if i == 0 {
				out = append(out, EnvVar{prefix + "_PORT", url})
			}
			pp := prefix + "_PORT_" + strconv.Itoa(int(p.Port)) + "_" + strings.ToUpper(proto)
			out = append(out, EnvVar{pp, url}, EnvVar{pp + "_PROTO", strings.ToLower(proto)},
				EnvVar{pp + "_PORT", strconv.Itoa(int(p.Port))}, EnvVar{pp + "_ADDR", ip})
		}
	}
	return out
}

// hasClusterIP is upstream's IsServiceIPSet, for a Service with ports.
func hasClusterIP(s *v1.Service) bool {
	return s.Spec.ClusterIP != "" && s.Spec.ClusterIP != v1.ClusterIPNone && len(s.Spec.Ports) > 0
}

// enableServiceLinks is the pod's enableServiceLinks, true when unset
// (its default).
func enableServiceLinks(pod *v1.Pod) bool {
	return pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
}
