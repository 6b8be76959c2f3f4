// Package regress runs regression tests of defects that show only through
// a started server (kite.Start) and its real clients: kubectl, client-go
// and the controllers. One server serves the whole package.
package regress

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

var shared *kite.Server

// The garbage collector and the ReplicaSet controller run besides the
// embedded default, for the foreground deletion of a ReplicaSet.
func TestMain(m *testing.M) {
	opts := kite.Options{Controllers: append(controllers.EmbeddedDefault(), controllers.GarbageCollector, controllers.ReplicaSet)}
	kitetest.MainWith(m, opts, func(s *kite.Server) { shared = s })
}

func config(t testing.TB) *rest.Config {
	t.Helper()
	return shared.RESTConfig()
}

func clientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(config(t))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// namespace creates a namespace for the test and deletes it after.
func namespace(t *testing.T, name string) string {
	t.Helper()
	cs := clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

const kubectlPath = "/usr/bin/kubectl"

// kubectl runs kubectl against the shared server with stdin and returns
// its combined output and error.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", shared.KubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustKubectl is kubectl that fails the test when kubectl fails.
func mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// ptrValue is what p points to, or nil, for messages.
func ptrValue[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
