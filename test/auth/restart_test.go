package auth_test

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/kitetest"
)

// TestCredentialsSurviveARestart: the signing key and the CA are kept in
// the data directory, so a ServiceAccount token and a user certificate
// issued before a restart authenticate after it.
func TestCredentialsSurviveARestart(t *testing.T) {
	r := kitetest.StartRestartable(t)
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(r.Server().RESTConfig())
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "keep"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "keep", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	userCfg, err := r.Server().AddUser("grace", nil)
	if err != nil {
		t.Fatal(err)
	}
	tokenCfg := rest.AnonymousClientConfig(r.Server().RESTConfig())
	tokenCfg.BearerToken = tr.Status.Token

	r.Stop()
	r.Start()
	for _, tc := range []struct {
		name, user string
		cfg        *rest.Config
	}{
		{"service account token", "system:serviceaccount:default:keep", tokenCfg},
		{"user certificate", "grace", userCfg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := whoami(ctx, tc.cfg)
			if err != nil || got.Username != tc.user {
				t.Fatalf("after the restart: %q, %v; want %q", got.Username, err, tc.user)
			}
		})
	}
}
