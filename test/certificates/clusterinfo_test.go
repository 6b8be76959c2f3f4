package certificates_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"

	"github.com/kite-project/kite/agent/bootstrap"
)

// clusterInfo reads kube-public/cluster-info without credentials, as a
// joining node does before it trusts anything.
func clusterInfo(t *testing.T, ctx context.Context) *corev1.ConfigMap {
	t.Helper()
	cm, err := clientset(t, rest.AnonymousClientConfig(shared.RESTConfig())).CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, bootstrapapi.ConfigMapClusterInfo, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("anonymous read of cluster-info: %v", err)
	}
	return cm
}

// TestClusterInfoIsSignedByEachBootstrapToken: the bootstrap signer puts
// a detached JWS of cluster-info's kubeconfig under
// jws-kubeconfig-<token-id> for every signing token, which verifies with
// the token and only with it, and removes it when its token expires (the
// token cleaner deletes the token).
func TestClusterInfoIsSignedByEachBootstrapToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cs := admin(t)
	token, err := bootstrap.CreateToken(ctx, cs, bootstrap.TokenOptions{Server: shared.URL(), CAPEM: shared.RESTConfig().CAData})
	if err != nil {
		t.Fatal(err)
	}
	id, secret := token[:6], token[7:]
	// A token that expires in a few seconds.
	const shortID, shortSecret = "abcdef", "0123456789abcdef"
	if _, err := cs.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.BootstrapTokenSecretPrefix + shortID},
		Type:       corev1.SecretType(bootstrapapi.SecretTypeBootstrapToken),
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey:           shortID,
			bootstrapapi.BootstrapTokenSecretKey:       shortSecret,
			bootstrapapi.BootstrapTokenUsageSigningKey: "true",
			bootstrapapi.BootstrapTokenExpirationKey:   time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339),
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		cm = clusterInfo(t, ctx)
		_, a := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id]
		_, b := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+shortID]
		return a && b, nil
	}); err != nil {
		t.Fatalf("cluster-info never signed by both tokens: %v", cm.Data)
	}
	content := cm.Data[bootstrapapi.KubeConfigKey]
	for _, tc := range []struct {
		name       string
		sigID      string
		id, secret string
		wantValid  bool
	}{
		{"the token's signature verifies with the token", id, id, secret, true},
		{"the short token's verifies with it", shortID, shortID, shortSecret, true},
		{"a signature does not verify with another token", id, shortID, shortSecret, false},
		{"nor with a wrong secret", id, id, "0000000000000000", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := jws.DetachedTokenIsValid(cm.Data[bootstrapapi.JWSSignatureKeyPrefix+tc.sigID], content, tc.id, tc.secret); got != tc.wantValid {
				t.Errorf("valid = %v, want %v", got, tc.wantValid)
			}
		})
	}
	// Past its expiry the short token is deleted and its signature goes;
	// the other stays.
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, bootstrapapi.BootstrapTokenSecretPrefix+shortID, metav1.GetOptions{})
		cm = clusterInfo(t, ctx)
		_, signed := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+shortID]
		return apierrors.IsNotFound(err) && !signed, nil
	}); err != nil {
		t.Fatalf("the expired token or its signature stayed: %v", cm.Data)
	}
	if _, ok := cm.Data[bootstrapapi.JWSSignatureKeyPrefix+id]; !ok {
		t.Errorf("the live token's signature went: %v", cm.Data)
	}
	// Anonymous requests read cluster-info only.
	_, err = clientset(t, rest.AnonymousClientConfig(shared.RESTConfig())).CoreV1().ConfigMaps(metav1.NamespacePublic).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("anonymous list of kube-public's configmaps: %v, want 403", err)
	}
}

// TestJoinVerifiesClusterInfoSignature: a joining agent trusts the CA of
// cluster-info only if its jws-kubeconfig-<token id> signature verifies
// with its bootstrap token (kubeadm's token discovery), on top of the CA
// pin: a server that shows the cluster's real CA (which matches the pin:
// it is public) but cannot sign with the token is refused with a clear
// error before the agent sends it anything, and the real server is
// trusted.
func TestJoinVerifiesClusterInfoSignature(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	caPEM := shared.RESTConfig().CAData
	token, err := bootstrap.CreateToken(ctx, admin(t), bootstrap.TokenOptions{Server: shared.URL(), CAPEM: caPEM})
	if err != nil {
		t.Fatal(err)
	}
	id, secret := token[:6], token[7:]
	hash, err := bootstrap.CAHashOfPEM(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	real := clusterInfo(t, ctx).Data[bootstrapapi.KubeConfigKey]
	sign := func(content, secret string) string {
		sig, err := jws.ComputeDetachedSignature(content, id, secret)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	for _, tc := range []struct {
		name    string
		data    map[string]string // nil: the real server
		wantErr string
	}{
		{"the real server's cluster-info is trusted", nil, ""},
		{"a signature made with another secret is refused", map[string]string{
			bootstrapapi.KubeConfigKey: real, bootstrapapi.JWSSignatureKeyPrefix + id: sign(real, "0000000000000000"),
		}, "failed to verify JWS signature of received cluster info object, can't trust this API Server"},
		{"a kubeconfig changed after signing is refused", map[string]string{
			bootstrapapi.KubeConfigKey: strings.Replace(real, shared.URL(), "https://127.0.0.1:1", 1), bootstrapapi.JWSSignatureKeyPrefix + id: sign(real, secret),
		}, "failed to verify JWS signature"},
		{"no signature for the token is refused", map[string]string{
			bootstrapapi.KubeConfigKey: real,
		}, `token id "` + id + `" is invalid for this cluster or it has expired`},
		{"no kubeconfig is refused", map[string]string{
			bootstrapapi.JWSSignatureKeyPrefix + id: sign("", secret),
		}, "This API Server isn't set up for token bootstrapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := shared.URL()
			var asked atomic.Int32
			if tc.data != nil {
				forger := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path != "/api/v1/namespaces/kube-public/configmaps/cluster-info" {
						asked.Add(1) // anything but discovery
						http.Error(w, "no", http.StatusForbidden)
						return
					}
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
						ObjectMeta: metav1.ObjectMeta{Name: bootstrapapi.ConfigMapClusterInfo, Namespace: metav1.NamespacePublic}, Data: tc.data})
				}))
				defer forger.Close()
				server = forger.URL
			}
			path, err := bootstrap.Join(ctx, bootstrap.JoinOptions{Server: server, Token: token, CACertHashes: []string{hash},
				NodeName: "jws-node", Dir: t.TempDir(), DiscoveryTimeout: 2 * time.Second})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("join: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("join: %v, want an error with %q", err, tc.wantErr)
			case tc.wantErr == "" && !strings.HasSuffix(path, bootstrap.KubeconfigFile):
				t.Errorf("join wrote %q", path)
			}
			if n := asked.Load(); n != 0 {
				t.Errorf("the agent made %d requests to the forger beyond discovery", n)
			}
		})
	}
}
