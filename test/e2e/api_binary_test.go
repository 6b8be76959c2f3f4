package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestAPIOfTheBinary runs "kite server" as a user does and uses the API
// through the kubeconfig it writes: kubectl, then client-go (create, get,
// watch). It skips while the command does not serve the API yet.
func TestAPIOfTheBinary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	args := []string{"server", "--data-dir", dir, "--unsafe-no-fsync", "--port=0"}
	if help, _ := exec.Command(kiteBinary, "server", "--help").CombinedOutput(); strings.Contains(string(help), "--secure-port") {
		args = append(args, "--secure-port=0") // never collide with another server on 6443
	}
	k := StartKite(t, args...)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if _, err := os.Stat(kubeconfig); err != nil {
		t.Skipf("kite server does not serve the API yet (no %s)", kubeconfig)
	}

	if _, err := os.Stat("/usr/bin/kubectl"); err == nil {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		out, err := exec.CommandContext(ctx, "/usr/bin/kubectl", "--kubeconfig", kubeconfig, "get", "namespaces").CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), "kube-system") {
			t.Fatalf("kubectl get namespaces: %v\n%s", err, out)
		}
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.CloseIdleConnections()
	client, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pods := client.CoreV1().Pods("default")
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch pods: %v", err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	select {
	case ev := <-w.ResultChan():
		if p, ok := ev.Object.(*v1.Pod); !ok || p.Name != "e2e" {
			t.Errorf("first event %s %T, want the created pod", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Error("no watch event for the created pod")
	}
	w.Stop()
	if code, _ := k.Stop(syscall.SIGTERM, shutdownLimit); code != 0 {
		t.Errorf("kite server exited with %d after SIGTERM\nstderr:\n%s", code, k.Stderr())
	}
}
