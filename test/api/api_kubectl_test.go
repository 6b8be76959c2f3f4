package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const kubectlPath = "/usr/bin/kubectl"

// kubectl runs kubectl against the shared server and returns its output;
// it fails the test when kubectl fails.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectlErr(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kubectlErr(t *testing.T, args ...string) (string, error) {
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

const podManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: nginx
    image: nginx:1.25
    ports:
    - containerPort: 80
`

func TestKubectl(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := "kubectl-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if out := kubectl(t, "create", "namespace", ns); !strings.Contains(out, "namespace/"+ns+" created") {
		t.Fatalf("create namespace: %s", out)
	}
	manifest := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(manifest, []byte(podManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	n := []string{"-n", ns}
	with := func(args ...string) []string { return append(append([]string{}, args...), n...) }

	if out := kubectl(t, with("apply", "-f", manifest)...); !strings.Contains(out, "pod/web created") {
		t.Errorf("first apply: %s", out)
	}
	if out := kubectl(t, with("apply", "-f", manifest)...); !strings.Contains(out, "pod/web unchanged") {
		t.Errorf("second apply: %s", out)
	}
	if out := kubectl(t, with("apply", "--server-side", "-f", manifest)...); !strings.Contains(out, "pod/web serverside-applied") {
		t.Errorf("server-side apply: %s", out)
	}

	var pod v1.Pod
	if err := json.Unmarshal([]byte(kubectl(t, with("get", "pod", "web", "-o", "json")...)), &pod); err != nil || pod.Name != "web" {
		t.Errorf("get -o json: %v, name %q", err, pod.Name)
	}
	if out := kubectl(t, with("get", "pod", "web", "-o", "yaml")...); !strings.Contains(out, "kind: Pod") || !strings.Contains(out, "image: nginx:1.25") {
		t.Errorf("get -o yaml:\n%s", out)
	}
	if out := kubectl(t, with("get", "pods", "-o", "wide")...); !strings.Contains(out, "NOMINATED NODE") || !strings.Contains(out, "Pending") {
		t.Errorf("get -o wide (upstream's pod columns):\n%s", out)
	}
	if out := kubectl(t, with("get", "pods", "-o", "name")...); strings.TrimSpace(out) != "pod/web" {
		t.Errorf("get -o name: %q", out)
	}
	if out := kubectl(t, with("get", "pods", "-l", "app=web", "-o", "name")...); strings.TrimSpace(out) != "pod/web" {
		t.Errorf("get -l app=web: %q", out)
	}
	if out := kubectl(t, with("get", "pods", "-l", "app=nothing")...); !strings.Contains(out, "No resources found") {
		t.Errorf("get -l app=nothing: %q", out)
	}
	if out := kubectl(t, with("get", "pods", "--field-selector", "status.phase=Pending", "-o", "name")...); strings.TrimSpace(out) != "pod/web" {
		t.Errorf("get --field-selector: %q", out)
	}
	if out := kubectl(t, with("describe", "pod", "web")...); !strings.Contains(out, "Image:") || !strings.Contains(out, "nginx:1.25") {
		t.Errorf("describe:\n%s", out)
	}

	kubectl(t, with("label", "pod", "web", "tier=front")...)
	kubectl(t, with("annotate", "pod", "web", "note=hello")...)
	kubectl(t, with("patch", "pod", "web", "-p", `{"metadata":{"labels":{"strategic":"yes"}}}`)...)
	kubectl(t, with("patch", "pod", "web", "--type", "merge", "-p", `{"metadata":{"labels":{"merge":"yes"}}}`)...)
	kubectl(t, with("patch", "pod", "web", "--type", "json", "-p", `[{"op":"add","path":"/metadata/labels/json","value":"yes"}]`)...)
	got, err := client.CoreV1().Pods(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"tier", "strategic", "merge", "json"} {
		if got.Labels[l] == "" {
			t.Errorf("label %q missing after label/patch: %v", l, got.Labels)
		}
	}
	if got.Annotations["note"] != "hello" {
		t.Errorf("annotate: %v", got.Annotations)
	}

	if out := kubectl(t, "api-resources"); !strings.Contains(out, "pods") || !strings.Contains(out, "leases") || !strings.Contains(out, "po ") {
		t.Errorf("api-resources:\n%s", out)
	}
	if out := kubectl(t, "explain", "pod.spec.containers"); !strings.Contains(out, "FIELD: containers") {
		t.Errorf("explain:\n%s", out)
	}
	if out := kubectl(t, "version"); !strings.Contains(out, "Server Version: v1.37") {
		t.Errorf("version:\n%s", out)
	}
	if out := kubectl(t, "auth", "can-i", "delete", "pods"); strings.TrimSpace(out) != "yes" {
		t.Errorf("auth can-i: %q", out)
	}
	if out := kubectl(t, "auth", "can-i", "--list"); !strings.Contains(out, "*.*") {
		t.Errorf("auth can-i --list:\n%s", out)
	}
	if out := kubectl(t, "auth", "whoami"); !strings.Contains(out, "kite-admin") || !strings.Contains(out, "system:masters") {
		t.Errorf("auth whoami:\n%s", out)
	}

	// wait for a condition the status writer sets.
	got.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(t.Context(), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectl(t, with("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")...)

	// delete: an unbound pod goes at once; a bound one needs --force.
	kubectl(t, with("delete", "pod", "web", "--wait=false")...)
	if out, _ := kubectlErr(t, with("get", "pod", "web")...); !strings.Contains(out, "NotFound") {
		t.Errorf("unbound pod still there after delete: %s", out)
	}
	kubectl(t, with("apply", "-f", manifest)...)
	if err := client.CoreV1().Pods(ns).Bind(t.Context(), &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Target: v1.ObjectReference{Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubectl(t, with("delete", "pod", "web", "--wait=false")...)
	if out := kubectl(t, with("get", "pod", "web", "-o", "jsonpath={.metadata.deletionTimestamp}")...); out == "" {
		t.Errorf("bound pod has no deletionTimestamp after delete")
	}
	kubectl(t, with("delete", "pod", "web", "--grace-period=0", "--force")...)
	if out, _ := kubectlErr(t, with("get", "pod", "web")...); !strings.Contains(out, "NotFound") {
		t.Errorf("bound pod still there after --force: %s", out)
	}

	kubectl(t, "delete", "namespace", ns, "--timeout=60s")
	if out, _ := kubectlErr(t, "get", "namespace", ns); !strings.Contains(out, "NotFound") {
		t.Errorf("namespace still there after delete: %s", out)
	}
}

// TestKubectlGetWatch runs "kubectl get -w", which watches with Table
// output, and checks that a change made meanwhile shows up.
func TestKubectlGetWatch(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("kubectl not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, "--kubeconfig", shared.KubeconfigPath(), "get", "pods", "-n", ns, "-w", "--request-timeout=60s")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		cmd.Wait()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	// Create until kubectl shows it: the watch may start after the first.
	created := false
	deadline := time.After(45 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("kubectl get -w ended without showing the pod")
			}
			if strings.HasPrefix(line, "watched ") {
				// Upstream's pod columns: NAME READY STATUS RESTARTS AGE.
				if !strings.Contains(line, "0/1") || !strings.Contains(line, "Pending") {
					t.Errorf("kubectl get -w printed %q, want the pod's READY and STATUS columns", line)
				}
				return
			}
		case <-tick.C:
			if !created {
				if _, err := client.CoreV1().Pods(ns).Create(t.Context(), testPod("watched"), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				created = true
			}
		case <-deadline:
			t.Fatal("kubectl get -w did not show the new pod")
		}
	}
}
