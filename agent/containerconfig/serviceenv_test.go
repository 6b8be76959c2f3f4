package containerconfig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testServices() []*v1.Service {
	svc := func(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
	}
	return []*v1.Service{
		svc("default", "kubernetes", "10.43.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP}),
		svc("ns1", "web-front", "10.43.0.20", v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}, v1.ServicePort{Name: "dns-udp", Port: 53, Protocol: v1.ProtocolUDP}),
		svc("ns1", "v6", "fd00::7", v1.ServicePort{Port: 8080}),
		svc("ns1", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80}),
		svc("ns1", "ext", ""),
		svc("ns2", "other", "10.43.0.30", v1.ServicePort{Port: 80}),
	}
}

var kubernetesVars = []EnvVar{
	{"KUBERNETES_SERVICE_HOST", "10.43.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}, {"KUBERNETES_SERVICE_PORT_HTTPS", "443"},
	{"KUBERNETES_PORT", "tcp://10.43.0.1:443"}, {"KUBERNETES_PORT_443_TCP", "tcp://10.43.0.1:443"}, {"KUBERNETES_PORT_443_TCP_PROTO", "tcp"},
	{"KUBERNETES_PORT_443_TCP_PORT", "443"}, {"KUBERNETES_PORT_443_TCP_ADDR", "10.43.0.1"},
}

func TestServiceEnv(t *testing.T) {
	for _, tc := range []struct {
		name      string
		namespace string
		links     bool
		want      []EnvVar
	}{
		{name: "the namespace's Services with a cluster IP and default's kubernetes", namespace: "ns1", links: true, want: append(kubernetesVars[:len(kubernetesVars):len(kubernetesVars)],
			EnvVar{"V6_SERVICE_HOST", "fd00::7"}, EnvVar{"V6_SERVICE_PORT", "8080"},
			EnvVar{"V6_PORT", "tcp://[fd00::7]:8080"}, EnvVar{"V6_PORT_8080_TCP", "tcp://[fd00::7]:8080"}, EnvVar{"V6_PORT_8080_TCP_PROTO", "tcp"},
			EnvVar{"V6_PORT_8080_TCP_PORT", "8080"}, EnvVar{"V6_PORT_8080_TCP_ADDR", "fd00::7"},
			EnvVar{"WEB_FRONT_SERVICE_HOST", "10.43.0.20"}, EnvVar{"WEB_FRONT_SERVICE_PORT", "80"},
			EnvVar{"WEB_FRONT_SERVICE_PORT_HTTP", "80"}, EnvVar{"WEB_FRONT_SERVICE_PORT_DNS_UDP", "53"},
			EnvVar{"WEB_FRONT_PORT", "tcp://10.43.0.20:80"},
			EnvVar{"WEB_FRONT_PORT_80_TCP", "tcp://10.43.0.20:80"}, EnvVar{"WEB_FRONT_PORT_80_TCP_PROTO", "tcp"},
			EnvVar{"WEB_FRONT_PORT_80_TCP_PORT", "80"}, EnvVar{"WEB_FRONT_PORT_80_TCP_ADDR", "10.43.0.20"},
			EnvVar{"WEB_FRONT_PORT_53_UDP", "udp://10.43.0.20:53"}, EnvVar{"WEB_FRONT_PORT_53_UDP_PROTO", "udp"},
			EnvVar{"WEB_FRONT_PORT_53_UDP_PORT", "53"}, EnvVar{"WEB_FRONT_PORT_53_UDP_ADDR", "10.43.0.20"})},
		{name: "enableServiceLinks false keeps kubernetes alone", namespace: "ns1", want: kubernetesVars},
		{name: "a pod of default gets kubernetes once", namespace: "default", links: true, want: kubernetesVars},
		{name: "a namespace without Services", namespace: "ns3", links: true, want: kubernetesVars},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, ServiceEnv(tc.namespace, tc.links, testServices())); d != "" {
				t.Errorf("ServiceEnv (-want +got):\n%s", d)
			}
		})
	}
}

// The container's own variables win over the Services', which come last
// and are expanded in $(VAR) references.
func TestEnvWithServices(t *testing.T) {
	c := v1.Container{Name: "c", Command: []string{"sh"}, Env: []v1.EnvVar{
		{Name: "KUBERNETES_SERVICE_PORT", Value: "6443"},
		{Name: "URL", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
	}}
	pod := testPod("ns1", c)
	pod.Spec.EnableServiceLinks = new(bool)
	in := inputs()
	in.Services = testServices()
	got, err := Env(pod, &c, in)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]EnvVar{{"KUBERNETES_SERVICE_PORT", "6443"}, {"URL", "https://10.43.0.1:6443"}, {"KUBERNETES_SERVICE_HOST", "10.43.0.1"}}, kubernetesVars[2:]...)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Env (-want +got):\n%s", d)
	}
}
