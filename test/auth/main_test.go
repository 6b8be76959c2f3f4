// Package auth_test tests who Kite says a request is, as clients see it:
// client certificates, ServiceAccount tokens (TokenRequest, TokenReview,
// bound objects), bootstrap tokens, impersonation, the OIDC discovery
// documents, through client-go and kubectl against one shared server.
package auth_test

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

var shared *kite.Server

// TestMain runs no controllers: the tests make the ServiceAccounts,
// pods and Secrets they need themselves.
func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Controllers: []string{controllers.ServiceAccount}}, func(s *kite.Server) { shared = s })
}

func admin(t *testing.T) kubernetes.Interface {
	t.Helper()
	return clientFor(t, shared.RESTConfig())
}

func clientFor(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// withToken is a client configuration of the shared server that
// authenticates with token alone.
func withToken(token string) *rest.Config {
	cfg := rest.AnonymousClientConfig(shared.RESTConfig())
	cfg.BearerToken = token
	return cfg
}

// whoami is what SelfSubjectReview says cfg's user is.
func whoami(ctx context.Context, cfg *rest.Config) (authenticationv1.UserInfo, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// namespace makes a namespace named for the test, with a ServiceAccount
// "sa" in it, and returns the namespace and the ServiceAccount.
func namespace(t *testing.T, name string) (string, *v1.ServiceAccount) {
	t.Helper()
	ctx := t.Context()
	cs := admin(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa, err := cs.CoreV1().ServiceAccounts(name).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name, sa
}

// eventually polls cond every 20 ms until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
