package certificates_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kite-project/kite/agent/bootstrap"
	"github.com/kite-project/kite/controllers/certificates/signer"
)

// TestJoinedNodeCertificates: a joined node asks for a kubelet-serving
// certificate for its address and name, which waits for a person's
// approval (upstream's rule) and, once approved, serves without a
// restart, verified by the API server; and it renews its client
// certificate before expiry through a new request (approved at once: a
// node renewing its own), and its connections swap to the new one
// without a restart. Certificates are renewed here 3 seconds after they
// are issued instead of at 70-90 % of their life.
func TestJoinedNodeCertificates(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	const node = "rotating-node"
	caPEM := shared.RESTConfig().CAData
	token, err := bootstrap.CreateToken(ctx, admin(t), bootstrap.TokenOptions{Server: shared.URL(), CAPEM: caPEM})
	if err != nil {
		t.Fatal(err)
	}
	hash, _ := bootstrap.CAHashOfPEM(caPEM)
	dir := t.TempDir()
	if _, err := bootstrap.Join(ctx, bootstrap.JoinOptions{Server: shared.URL(), Token: token, CACertHashes: []string{hash}, NodeName: node, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	n, err := bootstrap.NewNode(bootstrap.NodeOptions{Dir: dir, NodeName: node, ServingHosts: []string{"127.0.0.1", node},
		RenewAt: func(c *x509.Certificate) time.Time { return c.NotBefore.Add(signer.Backdate + 3*time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	first := n.Client.Current().Leaf
	nodeClient := clientset(t, n.RESTConfig())
	// credential is the credential the node's requests authenticate
	// with; "" on an error (a request cut by a rotation, which closes the
	// connections).
	credential := func(ctx context.Context) string {
		r, err := nodeClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Logf("the node's request: %v", err)
			return ""
		}
		if r.Status.UserInfo.Username != "system:node:"+node {
			t.Fatalf("the node is %q", r.Status.UserInfo.Username)
		}
		return strings.Join(r.Status.UserInfo.Extra["authentication.kubernetes.io/credential-id"], ",")
	}
	if got := credential(ctx); got != x509ID(first) {
		t.Fatalf("the node's credential %q, want its first certificate's %q", got, x509ID(first))
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { n.Run(runCtx) })
	defer wg.Wait()
	defer stop()

	// The serving request: the node's own, for its address and name,
	// left for a person.
	var csr *certificatesv1.CertificateSigningRequest
	cs := admin(t)
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=" + certificatesv1.KubeletServingSignerName})
		for i := range list.Items {
			if list.Items[i].Spec.Username == "system:node:"+node {
				csr = &list.Items[i]
			}
		}
		return csr != nil, err
	}); err != nil {
		t.Fatalf("no kubelet-serving request of the node: %v", err)
	}
	if err := shared.Controllers().WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{}); len(got.Status.Conditions) != 0 || n.Serving.Current() != nil {
		t.Fatalf("the serving request has conditions %+v, want it left for approval", got.Status.Conditions)
	}
	if out, err := kubectl(t, "certificate", "approve", csr.Name); err != nil {
		t.Fatalf("kubectl certificate approve: %v\n%s", err, out)
	}
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) { return n.Serving.Current() != nil, nil }); err != nil {
		t.Fatal("the approved serving certificate never served")
	}
	leaf := n.Serving.Current().Leaf
	if leaf.Subject.CommonName != "system:node:"+node || !slices.Equal(leaf.DNSNames, []string{node}) || len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("serving certificate for %s, %v, %v", leaf.Subject.CommonName, leaf.DNSNames, leaf.IPAddresses)
	}
	// The API server verifies it (the cluster CA issued it) and accepts
	// it for the node's address.
	pod := fakeAgentTLS(t, node, &tls.Config{GetCertificate: n.Serving.GetCertificate})
	if body, err := cs.CoreV1().Pods("default").GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(ctx); err != nil || string(body) != "hello" {
		t.Errorf("logs through the agent's serving certificate: %q, %v", body, err)
	}

	// The client certificate is renewed, and the same client
	// authenticates with the new one.
	var renewed *x509.Certificate
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		renewed = n.Client.Current().Leaf
		return n.Client.Rotations() > 0 && credential(ctx) == x509ID(renewed), nil
	}); err != nil {
		t.Fatalf("the node's requests never authenticated with a renewed certificate (rotations %d)", n.Client.Rotations())
	}
	if renewed.Equal(first) || renewed.Subject.CommonName != first.Subject.CommonName {
		t.Errorf("renewed certificate %s, first %s", renewed.Subject.CommonName, first.Subject.CommonName)
	}
}

// x509ID is the credential id the API server gives a certificate's user.
func x509ID(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return "X509SHA256=" + hex.EncodeToString(sum[:])
}
