package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec:       corev1.NodeSpec{PodCIDR: "10.244.0.0/24", PodCIDRs: []string{"10.244.0.0/24"}},
		Status: corev1.NodeStatus{
			Capacity:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.1.10"}},
		},
	}
}

func TestValidateNode(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Node)
		want   []want
	}{
		{"valid", func(*corev1.Node) {}, nil},
		{"name must be a DNS subdomain", func(n *corev1.Node) { n.Name = "Node_1" },
			[]want{{field.ErrorTypeInvalid, "metadata.name"}}},
		{"namespace forbidden", func(n *corev1.Node) { n.Namespace = "default" },
			[]want{{field.ErrorTypeForbidden, "metadata.namespace"}}},
		{"taint effect required", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k"}} },
			[]want{{field.ErrorTypeRequired, "metadata.taints[0].effect"}}},
		{"taint effect unknown", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: "Evict"}} },
			[]want{{field.ErrorTypeNotSupported, "metadata.taints[0].effect"}}},
		{"duplicate taint", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}, {Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}
		}, []want{{field.ErrorTypeDuplicate, "metadata.taints[1]"}}},
		{"negative capacity", func(n *corev1.Node) { n.Status.Capacity[corev1.ResourceMemory] = resource.MustParse("-1") },
			[]want{{field.ErrorTypeInvalid, "status.capacity.memory"}}},
		{"bad pod CIDR", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.0.0"} },
			[]want{{field.ErrorTypeInvalid, "spec.podCIDRs[0]"}}},
		{"two IPv4 pod CIDRs", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.244.0.0/24", "10.245.0.0/24"} },
			[]want{{field.ErrorTypeInvalid, "spec.podCIDRs"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := validNode()
			tc.mutate(node)
			checkErrors(t, ValidateNode(node), tc.want...)
		})
	}
}

func TestValidateNodeUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Node)
		want   []want
	}{
		{"labels, taints, unschedulable, status change", func(n *corev1.Node) {
			n.Labels = map[string]string{"zone": "a"}
			n.Spec.Unschedulable = true
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoExecute}}
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		}, nil},
		{"pod CIDR change refused", func(n *corev1.Node) { n.Spec.PodCIDRs = []string{"10.245.0.0/24"} },
			[]want{{field.ErrorTypeForbidden, "spec.podCIDRs"}}},
		{"duplicate address", func(n *corev1.Node) { n.Status.Addresses = append(n.Status.Addresses, n.Status.Addresses[0]) },
			[]want{{field.ErrorTypeDuplicate, "status.addresses[1]"}}},
		{"providerID change refused", func(n *corev1.Node) { n.Spec.ProviderID = "other" },
			[]want{{field.ErrorTypeForbidden, "spec.providerID"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := validNode()
			old.ResourceVersion = "1"
			old.Spec.ProviderID = "kite://node-1"
			node := old.DeepCopy()
			tc.mutate(node)
			checkErrors(t, ValidateNodeUpdate(node, old), tc.want...)
		})
	}
}
