package certificates_test

import (
	"context"
	"crypto/x509/pkix"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A node identity may create and change only its own Node, create only
// its mirror pods, and change only the pods bound to it, whatever
// system:node's rules let through (NodeRestriction, on by default).
func TestNodeRestriction(t *testing.T) {
	cs, ctx := admin(t), t.Context()
	node := as(t, "system:node:nr-node")
	self, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nr-node", Labels: map[string]string{corev1.LabelHostname: "nr-node"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the node registers itself: %v", err)
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nr-other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nr-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name, nodeName string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name}, Spec: corev1.PodSpec{
			NodeName: nodeName, AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		}}
	}
	for _, p := range []*corev1.Pod{pod("mine", "nr-node"), pod("theirs", "nr-other")} {
		if _, err := cs.CoreV1().Pods(ns.Name).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mirror := func(owner types.UID) *corev1.Pod {
		p := pod("static-nr-node", "nr-node")
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "nr-node", UID: owner, Controller: ptr.To(true)}}
		return p
	}
	merge := func(patch string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := node.CoreV1().Nodes().Patch(ctx, "nr-node", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}
	}
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
		want string // "" allowed, else a part of the 403's message
	}{
		{"patch another node", func(ctx context.Context) error {
			_, err := node.CoreV1().Nodes().Patch(ctx, "nr-other", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
			return err
		}, `node "nr-node" is not allowed to modify node "nr-other"`},
		{"create another node", func(ctx context.Context) error {
			_, err := node.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nr-third"}}, metav1.CreateOptions{})
			return err
		}, `node "nr-node" is not allowed to modify node "nr-third"`},
		{"label itself", merge(`{"metadata":{"labels":{"team":"a","node.kubernetes.io/role":"x"}}}`), ""},
		{"label itself node-restriction", merge(`{"metadata":{"labels":{"node-restriction.kubernetes.io/pool":"secure"}}}`), "is not allowed to modify labels: node-restriction.kubernetes.io/pool"},
		{"untaint itself", merge(`{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`), `node "nr-node" is not allowed to modify taints`},
		{"create a pod", func(ctx context.Context) error {
			_, err := node.CoreV1().Pods(ns.Name).Create(ctx, pod("made", "nr-node"), metav1.CreateOptions{})
			return err
		}, `node "nr-node" can only create mirror pods`},
		{"create a mirror pod owned by another uid", func(ctx context.Context) error {
			_, err := node.CoreV1().Pods(ns.Name).Create(ctx, mirror("not-the-uid"), metav1.CreateOptions{})
			return err
		}, "UID mismatch"},
		{"create its mirror pod", func(ctx context.Context) error {
			_, err := node.CoreV1().Pods(ns.Name).Create(ctx, mirror(self.UID), metav1.CreateOptions{})
			return err
		}, ""},
		{"update the status of a pod elsewhere", func(ctx context.Context) error {
			p, err := cs.CoreV1().Pods(ns.Name).Get(ctx, "theirs", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Status.Message = "mine now"
			_, err = node.CoreV1().Pods(ns.Name).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			return err
		}, `node "nr-node" can only update pod status for pods with spec.nodeName set to itself`},
		{"update the status of its pod", func(ctx context.Context) error {
			p, err := cs.CoreV1().Pods(ns.Name).Get(ctx, "mine", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Status.Message = "running here"
			_, err = node.CoreV1().Pods(ns.Name).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			return err
		}, ""},
		{"delete a pod elsewhere", func(ctx context.Context) error {
			return node.CoreV1().Pods(ns.Name).Delete(ctx, "theirs", metav1.DeleteOptions{})
		}, `node "nr-node" can only delete pods with spec.nodeName set to itself`},
		{"ask for another node's certificate", func(ctx context.Context) error {
			csr, _ := newCSR(t, certificatesv1.KubeAPIServerClientKubeletSignerName, pkix.Name{CommonName: "system:node:nr-other", Organization: []string{"system:nodes"}})
			_, err := node.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
			return err
		}, "can only create a node CSR with CN=system:node:nr-node"},
		{"ask for its own certificate", func(ctx context.Context) error {
			csr, _ := newCSR(t, certificatesv1.KubeAPIServerClientKubeletSignerName, pkix.Name{CommonName: "system:node:nr-node", Organization: []string{"system:nodes"}})
			_, err := node.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
			return err
		}, ""},
		{"delete its pod", func(ctx context.Context) error {
			return node.CoreV1().Pods(ns.Name).Delete(ctx, "mine", metav1.DeleteOptions{})
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(ctx)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want 403 %q", err, tc.want)
			}
		})
	}
}
