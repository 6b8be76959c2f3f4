// Package certificates_test tests CertificateSigningRequests as clients
// see them, against one shared server that runs the CSR signer and
// approver: the requestor taken from the request's user, approval and
// denial with kubectl, the approve permission, the certificates the
// signer issues authenticating as their subjects, and the cleaner; and
// NodeRestriction, which keeps node identities to their own objects.
package certificates_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/apiserver/authn"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

var shared *kite.Server

// users are the shared server's static users: name and groups.
var users = map[string][]string{
	"alice": {user.AllAuthenticated, "team-a"},
	"bob":   {user.AllAuthenticated},
	// A node identity, for NodeRestriction.
	"system:node:nr-node": {user.AllAuthenticated, user.NodesGroup},
}

func TestMain(m *testing.M) {
	var tokens []authn.Token
	for name, groups := range users {
		tokens = append(tokens, authn.Token{Value: "token-" + name, User: &user.DefaultInfo{Name: name, UID: "uid-" + name, Groups: groups}})
	}
	kitetest.MainWith(m, kite.Options{
		StaticTokens: tokens,
		Controllers:  []string{controllers.Namespace, controllers.ServiceAccount, controllers.ClusterRoleAggregation, controllers.CSRSigning, controllers.CSRApproving, controllers.BootstrapSigner, controllers.TokenCleaner},
	}, func(s *kite.Server) { shared = s })
}

func admin(t testing.TB) kubernetes.Interface {
	t.Helper()
	return clientset(t, shared.RESTConfig())
}

func as(t testing.TB, name string) kubernetes.Interface {
	t.Helper()
	c := shared.RESTConfig()
	c.BearerToken = "token-" + name
	return clientset(t, c)
}

func clientset(t testing.TB, c *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// request is a PEM PKCS#10 request for subject, with its key.
func request(t testing.TB, subject pkix.Name) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), key
}

// newCSR is a request of signer for subject with usages.
func newCSR(t testing.TB, signer string, subject pkix.Name, usages ...certificatesv1.KeyUsage) (*certificatesv1.CertificateSigningRequest, *ecdsa.PrivateKey) {
	t.Helper()
	req, key := request(t, subject)
	if len(usages) == 0 {
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: req, SignerName: signer, Usages: usages},
	}, key
}

// waitFor polls the request until cond holds.
func waitFor(t *testing.T, cs kubernetes.Interface, name, what string, cond func(*certificatesv1.CertificateSigningRequest) bool) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	var last *certificatesv1.CertificateSigningRequest
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = got
		return cond(got), nil
	})
	if err != nil {
		t.Fatalf("csr %s: %s: %v (last: %+v)", name, what, err, last.Status)
	}
	return last
}

const kubectlPath = "/usr/bin/kubectl"

// kubectl runs kubectl as the admin.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", shared.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
