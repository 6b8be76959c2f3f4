// Package admission_test tests dry-run and admission as clients see them
// (client-go, kubectl, webhook servers on 127.0.0.1) against one shared
// server (kitetest.Main).
package admission_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

// shared is the control plane every test of this package talks to.
var shared *kite.Server

// TestMain starts it with only the serviceaccount, resourcequota and
// validatingadmissionpolicy-status controllers: the tests count the
// objects and events of their namespaces, which no other controller may
// add to, pods need their namespace's default ServiceAccount (the
// ServiceAccount plugin), quotas their status (the ResourceQuota plugin)
// and admission policies their type-checking status.
func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Controllers: []string{controllers.ServiceAccount, controllers.ResourceQuota, controllers.ValidatingAdmissionPolicyStatus}}, func(s *kite.Server) { shared = s })
}

func config(t testing.TB) *rest.Config {
	t.Helper()
	return shared.RESTConfig()
}

func newNamespace(t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "adm-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

const kubectlPath = "/usr/bin/kubectl"

// kubectl runs kubectl against the shared server with stdin as input and
// returns its combined output and error.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	// Not t.Context(): that is canceled before cleanups run, and a
	// cleanup's kubectl delete must still run.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", shared.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
