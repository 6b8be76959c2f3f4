// Package authz_test tests authorization as clients see it: the RBAC API
// through client-go and kubectl, the 403s of users bound to roles, the
// Node authorizer, escalation prevention, the bootstrap policy and the
// access reviews, against one shared server whose extra users
// authenticate with static tokens (kite.Options.StaticTokens).
package authz_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/apiserver/authn"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

var shared *kite.Server

// users are the shared server's static users, by name: token and groups.
var users = map[string][]string{
	"alice":              {user.AllAuthenticated},
	"bob":                {user.AllAuthenticated},
	"carol":              {user.AllAuthenticated, "team-carol"},
	"system:node:node-a": {user.NodesGroup, user.AllAuthenticated},
}

func TestMain(m *testing.M) {
	var tokens []authn.Token
	for name, groups := range users {
		tokens = append(tokens, authn.Token{Value: tokenOf(name), User: &user.DefaultInfo{Name: name, Groups: groups}})
	}
	kitetest.MainWith(m, kite.Options{
		StaticTokens: tokens,
		Controllers:  []string{controllers.Namespace, controllers.ServiceAccount, controllers.ClusterRoleAggregation},
	}, func(s *kite.Server) { shared = s })
}

func tokenOf(name string) string { return "token-" + strings.ReplaceAll(name, ":", "-") }

// admin is a clientset of the admin (system:masters).
func admin(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// configAs is a client configuration of a static user.
func configAs(name string) *rest.Config {
	c := shared.RESTConfig()
	c.BearerToken = tokenOf(name)
	return c
}

// as is a clientset of a static user.
func as(t testing.TB, name string) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(configAs(name))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// namespace makes a namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	ns, err := admin(t).CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "authz-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

const kubectlPath = "/usr/bin/kubectl"

// kubectl runs kubectl as the admin, or as a static user with --token.
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
	return string(out), err
}
