package authz_test

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

const nodeUser = "system:node:node-a"

func TestNodeReadsOnlyWhatItsPodsUse(t *testing.T) {
	ns := namespace(t)
	cs := admin(t)
	ctx := t.Context()
	for _, name := range []string{"used", "unused"} {
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{
		NodeName:   "node-a",
		Containers: []corev1.Container{{Name: "c", Image: "busybox", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}},
		Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "used"}}}},
	}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node := as(t, nodeUser)
	if err := eventually(t, func(ctx context.Context) error {
		_, err := node.CoreV1().Secrets(ns).Get(ctx, "used", metav1.GetOptions{})
		return err
	}); err != nil {
		t.Fatalf("node-a reads the secret of its pod: %v", err)
	}
	// A configMap the pod names is authorized even before it exists.
	if _, err := node.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node-a reads its pod's configmap: %v, want 404 (authorized, missing)", err)
	}
	if _, err := node.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "node-a").String()}); err != nil {
		t.Errorf("node-a lists its pods: %v", err)
	}
	if _, err := node.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("node-a creates its lease: %v", err)
	}
	if _, err := node.CoreV1().Services(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("node-a lists services (system:node's rules): %v", err)
	}
	for _, tc := range []struct {
		name    string
		call    func(ctx context.Context) error
		message string
	}{
		{"a secret no pod of it uses", func(ctx context.Context) error {
			_, err := node.CoreV1().Secrets(ns).Get(ctx, "unused", metav1.GetOptions{})
			return err
		}, `secrets "unused" is forbidden: User "system:node:node-a" cannot get resource "secrets" in API group "" in the namespace "` + ns + `": node: no relationship found between node 'node-a' and this object`},
		{"every pod", func(ctx context.Context) error {
			_, err := node.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err
		}, `pods is forbidden: User "system:node:node-a" cannot list resource "pods" in API group "" in the namespace "` + ns + `": node: can only list/watch pods with spec.nodeName field selector`},
		{"another node", func(ctx context.Context) error {
			_, err := node.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
			return err
		}, `nodes "node-b" is forbidden: User "system:node:node-a" cannot get resource "nodes" in API group "" at the cluster scope: node: node 'node-a' cannot read 'node-b', only its own Node object`},
		{"another node's lease", func(ctx context.Context) error {
			_, err := node.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node-b", metav1.GetOptions{})
			return err
		}, `leases.coordination.k8s.io "node-b" is forbidden: User "system:node:node-a" cannot get resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease": node: can only access node lease with the same name as the requesting node`},
	} {
		t.Run(tc.name, func(t *testing.T) { wantForbidden(t, tc.call(ctx), tc.message) })
	}
	// Once the pod is gone, so is the node's access to its secret.
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "p", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	if err := eventually(t, func(ctx context.Context) error {
		_, err := node.CoreV1().Secrets(ns).Get(ctx, "used", metav1.GetOptions{})
		if apierrors.IsForbidden(err) {
			return nil
		}
		return errNoRules
	}); err != nil {
		t.Errorf("node-a still reads the secret of its deleted pod")
	}
}
