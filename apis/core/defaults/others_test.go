package defaults

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestService(t *testing.T) {
	cases := []struct {
		name  string
		svc   corev1.Service
		check func(*corev1.Service) bool
	}{
		{"plain service as kubectl shows it", corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}},
			func(s *corev1.Service) bool {
				p := s.Spec.Ports[0]
				return s.Spec.Type == corev1.ServiceTypeClusterIP && s.Spec.SessionAffinity == corev1.ServiceAffinityNone &&
					p.Protocol == corev1.ProtocolTCP && p.TargetPort == intstr.FromInt32(80) &&
					*s.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyCluster &&
					s.Spec.ExternalTrafficPolicy == "" && s.Spec.AllocateLoadBalancerNodePorts == nil
			}},
		{"named target port kept", corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}}},
			func(s *corev1.Service) bool { return s.Spec.Ports[0].TargetPort == intstr.FromString("http") }},
		{"node port gets external policy Cluster", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}},
			func(s *corev1.Service) bool {
				return s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyCluster
			}},
		{"load balancer allocates node ports", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}},
			func(s *corev1.Service) bool { return *s.Spec.AllocateLoadBalancerNodePorts }},
		{"ClientIP affinity gets timeout", corev1.Service{Spec: corev1.ServiceSpec{SessionAffinity: corev1.ServiceAffinityClientIP}},
			func(s *corev1.Service) bool { return *s.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds == 10800 }},
		{"ExternalName gets no traffic policies", corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}},
			func(s *corev1.Service) bool {
				return s.Spec.InternalTrafficPolicy == nil && s.Spec.ExternalTrafficPolicy == ""
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := tc.svc.DeepCopy()
			Service(svc)
			if !tc.check(svc) {
				t.Errorf("defaulted service: %+v", svc.Spec)
			}
		})
	}
}

func TestNamespace(t *testing.T) {
	cases := []struct {
		name      string
		ns        corev1.Namespace
		forCreate bool
		wantLabel string
		wantFin   []corev1.FinalizerName
	}{
		{"name label set", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, false, "team-a", nil},
		{"name label overrides user value", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a",
			Labels: map[string]string{corev1.LabelMetadataName: "other"}}}, false, "team-a", nil},
		{"no label without a name", corev1.Namespace{}, false, "", nil},
		{"create adds kubernetes finalizer", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, true, "a",
			[]corev1.FinalizerName{corev1.FinalizerKubernetes}},
		{"create keeps other finalizers and adds kubernetes once", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"},
			Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/x", corev1.FinalizerKubernetes}}}, true, "a",
			[]corev1.FinalizerName{"example.com/x", corev1.FinalizerKubernetes}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := tc.ns.DeepCopy()
			if tc.forCreate {
				NamespaceForCreate(ns)
			} else {
				Namespace(ns)
			}
			if got := ns.Labels[corev1.LabelMetadataName]; got != tc.wantLabel {
				t.Errorf("label = %q, want %q", got, tc.wantLabel)
			}
			if ns.Status.Phase != corev1.NamespaceActive {
				t.Errorf("phase = %q, want Active", ns.Status.Phase)
			}
			if len(ns.Spec.Finalizers) != len(tc.wantFin) {
				t.Fatalf("finalizers = %v, want %v", ns.Spec.Finalizers, tc.wantFin)
			}
			for i := range tc.wantFin {
				if ns.Spec.Finalizers[i] != tc.wantFin[i] {
					t.Errorf("finalizers = %v, want %v", ns.Spec.Finalizers, tc.wantFin)
				}
			}
		})
	}
}

func TestNode(t *testing.T) {
	node := &corev1.Node{
		Spec:   corev1.NodeSpec{PodCIDR: "10.244.0.0/24"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
	}
	Node(node)
	if q := node.Status.Allocatable[corev1.ResourceCPU]; q.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("allocatable cpu = %s, want 4", q.String())
	}
	if len(node.Spec.PodCIDRs) != 1 || node.Spec.PodCIDRs[0] != "10.244.0.0/24" {
		t.Errorf("podCIDRs = %v", node.Spec.PodCIDRs)
	}
}

func TestSecret(t *testing.T) {
	cases := []struct {
		name     string
		secret   corev1.Secret
		wantType corev1.SecretType
		wantData map[string]string
	}{
		{"type Opaque", corev1.Secret{}, corev1.SecretTypeOpaque, nil},
		{"type kept", corev1.Secret{Type: corev1.SecretTypeTLS}, corev1.SecretTypeTLS, nil},
		{"stringData merged over data", corev1.Secret{
			Data:       map[string][]byte{"a": []byte("1"), "b": []byte("2")},
			StringData: map[string]string{"b": "two", "c": "three"},
		}, corev1.SecretTypeOpaque, map[string]string{"a": "1", "b": "two", "c": "three"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.secret.DeepCopy()
			Secret(s)
			if s.Type != tc.wantType {
				t.Errorf("type = %q, want %q", s.Type, tc.wantType)
			}
			if s.StringData != nil {
				t.Errorf("stringData kept: %v", s.StringData)
			}
			if len(s.Data) != len(tc.wantData) {
				t.Errorf("data = %v, want %v", s.Data, tc.wantData)
			}
			for k, v := range tc.wantData {
				if string(s.Data[k]) != v {
					t.Errorf("data[%s] = %q, want %q", k, s.Data[k], v)
				}
			}
		})
	}
}

func TestNormalizeServiceClusterIPs(t *testing.T) {
	withIPs := func(ip string, ips ...string) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: ips}}
	}
	cases := []struct {
		name     string
		old, svc *corev1.Service
		want     []string
	}{
		{"create with clusterIP only", nil, withIPs("10.96.0.5"), []string{"10.96.0.5"}},
		{"create with neither", nil, withIPs(""), nil},
		{"create headless", nil, withIPs("None"), []string{"None"}},
		{"update from an old client keeps clusterIPs", withIPs("10.96.0.5", "10.96.0.5", "fd00::5"), withIPs("10.96.0.5"), []string{"10.96.0.5", "fd00::5"}},
		{"update changing clusterIP alone carries clusterIPs", withIPs("10.96.0.5", "10.96.0.5"), withIPs("10.96.0.6", "10.96.0.5"), []string{"10.96.0.6"}},
		{"update clearing clusterIP clears clusterIPs", withIPs("10.96.0.5", "10.96.0.5"), withIPs("", "10.96.0.5"), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NormalizeServiceClusterIPs(tc.old, tc.svc)
			if !slices.Equal(tc.svc.Spec.ClusterIPs, tc.want) {
				t.Errorf("clusterIPs = %v, want %v", tc.svc.Spec.ClusterIPs, tc.want)
			}
		})
	}
}

func TestTolerationSeconds(t *testing.T) {
	secs := func(s int64) *int64 { return &s }
	notReady := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(300)}
	unreachable := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(300)}
	other := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoSchedule}
	own := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: secs(10)}
	cases := []struct {
		name string
		in   []corev1.Toleration
		want []corev1.Toleration
	}{
		{"none get both", nil, []corev1.Toleration{notReady, unreachable}},
		{"others are kept", []corev1.Toleration{other}, []corev1.Toleration{other, notReady, unreachable}},
		{"an own not-ready toleration stays", []corev1.Toleration{own}, []corev1.Toleration{own, unreachable}},
		{"tolerating every key with no effect covers both", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		{"a NoSchedule one does not count", []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			[]corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, notReady, unreachable}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: c.in}}
			TolerationSeconds(pod, DefaultTolerationSeconds)
			if !reflect.DeepEqual(pod.Spec.Tolerations, c.want) {
				t.Fatalf("tolerations = %+v, want %+v", pod.Spec.Tolerations, c.want)
			}
		})
	}
}
