package serviceaccounttoken_test

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

var srv *kite.Server

func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Controllers: []string{controllers.ServiceAccountToken}}, func(s *kite.Server) { srv = s })
}

func whoami(ctx context.Context, token string) (string, error) {
	cfg := rest.AnonymousClientConfig(srv.RESTConfig())
	cfg.BearerToken = token
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return r.Status.UserInfo.Username, nil
}

// TestTokenSecretIsFilledAndDiesWithItsServiceAccount: a user's
// kubernetes.io/service-account-token Secret gets a working token,
// ca.crt, the namespace and the account's UID; when the ServiceAccount
// goes, the Secret goes, and its token stops working.
func TestTokenSecretIsFilledAndDiesWithItsServiceAccount(t *testing.T) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "satoken-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa, err := cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns.Name).Create(ctx, &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "robot-token", Annotations: map[string]string{v1.ServiceAccountNameKey: "robot"}},
		Type:       v1.SecretTypeServiceAccountToken,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var secret *v1.Secret
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		secret, err = cs.CoreV1().Secrets(ns.Name).Get(ctx, "robot-token", metav1.GetOptions{})
		return err == nil && len(secret.Data[v1.ServiceAccountTokenKey]) > 0, err
	}); err != nil {
		t.Fatalf("the secret was not filled: %v", err)
	}
	if string(secret.Data["ca.crt"]) != string(srv.RESTConfig().CAData) || string(secret.Data["namespace"]) != ns.Name ||
		secret.Annotations[v1.ServiceAccountUIDKey] != string(sa.UID) {
		t.Errorf("secret data/annotations: ca.crt %d bytes, namespace %q, uid %q", len(secret.Data["ca.crt"]), secret.Data["namespace"], secret.Annotations[v1.ServiceAccountUIDKey])
	}
	token := string(secret.Data[v1.ServiceAccountTokenKey])
	if user, err := whoami(ctx, token); err != nil || user != "system:serviceaccount:"+ns.Name+":robot" {
		t.Fatalf("the token is %q, %v", user, err)
	}
	if err := cs.CoreV1().ServiceAccounts(ns.Name).Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Secrets(ns.Name).Get(ctx, "robot-token", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("the secret outlived its service account: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := whoami(ctx, token)
		return apierrors.IsUnauthorized(err), nil
	}); err != nil {
		t.Fatalf("the token outlived its secret: %v", err)
	}
}
