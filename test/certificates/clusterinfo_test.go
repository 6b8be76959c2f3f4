package certificates_test

import (
	"context"
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
