package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/core/defaults"
)

// validService is a defaulted service with its cluster IP allocated, as
// the registry hands it to validation.
func validService() *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80}},
			ClusterIP:  "10.96.0.10",
			ClusterIPs: []string{"10.96.0.10"},
		},
	}
	defaults.Service(svc)
	return svc
}

func TestValidateService(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Service)
		want   []want
	}{
		{"valid", func(*corev1.Service) {}, nil},
		{"name must be a DNS-1035 label", func(s *corev1.Service) { s.Name = "1web" },
			[]want{{field.ErrorTypeInvalid, "metadata.name"}}},
		{"ports required", func(s *corev1.Service) { s.Spec.Ports = nil },
			[]want{{field.ErrorTypeRequired, "spec.ports"}}},
		{"headless needs no ports", func(s *corev1.Service) {
			s.Spec.Ports, s.Spec.ClusterIP, s.Spec.ClusterIPs = nil, "None", []string{"None"}
		}, nil},
		{"port out of range", func(s *corev1.Service) { s.Spec.Ports[0].Port = 0 },
			[]want{{field.ErrorTypeInvalid, "spec.ports[0].port"}}},
		{"name required with two ports", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(443)})
		}, []want{{field.ErrorTypeRequired, "spec.ports[1].name"}}},
		{"duplicate port name", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "http", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(443)})
		}, []want{{field.ErrorTypeDuplicate, "spec.ports[1].name"}}},
		{"duplicate port and protocol", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "other", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)})
		}, []want{{field.ErrorTypeDuplicate, "spec.ports[1]"}}},
		{"protocol unknown", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "HTTP" },
			[]want{{field.ErrorTypeNotSupported, "spec.ports[0].protocol"}}},
		{"target port name invalid", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("Not_Valid") },
			[]want{{field.ErrorTypeInvalid, "spec.ports[0].targetPort"}}},
		{"type unknown", func(s *corev1.Service) { s.Spec.Type = "Internal" },
			[]want{{field.ErrorTypeNotSupported, "spec.type"}}},
		{"node port on ClusterIP", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 },
			[]want{{field.ErrorTypeForbidden, "spec.ports[0].nodePort"}}},
		{"selector bad value", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "a b"} },
			[]want{{field.ErrorTypeInvalid, "spec.selector"}}},
		{"session affinity unknown", func(s *corev1.Service) { s.Spec.SessionAffinity = "Cookie" },
			[]want{{field.ErrorTypeNotSupported, "spec.sessionAffinity"}}},
		{"clusterIPs must match clusterIP", func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.96.0.11"} },
			[]want{{field.ErrorTypeInvalid, "spec.clusterIPs"}}},
		{"clusterIP not an IP", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "ten", []string{"ten"} },
			[]want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]"}}},
		{"two IPv4 cluster IPs", func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.96.0.10", "10.96.0.11"} },
			[]want{{field.ErrorTypeInvalid, "spec.clusterIPs"}}},
		{"cluster IP of the wrong family", func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol} },
			[]want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]"}}},
		{"dual stack", func(s *corev1.Service) {
			s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10"}
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		}, nil},
		{"ExternalName requires externalName", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.InternalTrafficPolicy = corev1.ServiceTypeExternalName, "", nil, nil
		}, []want{{field.ErrorTypeRequired, "spec.externalName"}}},
		{"external traffic policy on ClusterIP", func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal },
			[]want{{field.ErrorTypeInvalid, "spec.externalTrafficPolicy"}}},
		{"internal traffic policy required", func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = nil },
			[]want{{field.ErrorTypeRequired, "spec.internalTrafficPolicy"}}},
		{"internal traffic policy unknown", func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicy("Nearby"))
		}, []want{{field.ErrorTypeNotSupported, "spec.internalTrafficPolicy"}}},
		{"headless NodePort", func(s *corev1.Service) {
			s.Spec.Type, s.Spec.ClusterIP, s.Spec.ClusterIPs = corev1.ServiceTypeNodePort, "None", []string{"None"}
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		}, []want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := validService()
			tc.mutate(svc)
			checkErrors(t, ValidateService(svc), tc.want...)
		})
	}
}

func TestValidateServiceUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Service)
		want   []want
	}{
		{"selector change allowed", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "v2"} }, nil},
		{"cluster IP change refused", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"} },
			[]want{{field.ErrorTypeInvalid, "spec.clusterIPs[0]"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validService()
			old.ResourceVersion = "1"
			svc := old.DeepCopy()
			tc.mutate(svc)
			checkErrors(t, ValidateServiceUpdate(svc, old), tc.want...)
		})
	}
}
