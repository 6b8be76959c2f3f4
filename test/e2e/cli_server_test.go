package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestServerAsAUser runs "kite server" with a manifest directory and uses
// it as the README says: kubectl through the kubeconfig it names, a pod
// applied, a static pod dropped into the directory (logged by the agent,
// its mirror pod listed), SIGTERM, and a restart on the same data dir.
func TestServerAsAUser(t *testing.T) {
	needKubectl(t)
	dir := filepath.Join(t.TempDir(), "data")
	manifests := t.TempDir()
	const node = "e2e-node"
	args := []string{"server", "--data-dir", dir, "--secure-port=0", "--unsafe-no-fsync",
		"--pod-manifest-path", manifests, "--hostname-override", node}
	k := StartKite(t, args...)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if !strings.Contains(k.Stdout(), "kubectl --kubeconfig "+kubeconfig+" get pods") {
		t.Errorf("the start does not say how to use the kubeconfig %s:\n%s", kubeconfig, k.Stdout())
	}

	kubectl(t, kubeconfig, "get", "pods", "-A")
	podFile := filepath.Join(t.TempDir(), "web.yaml")
	writeFile(t, podFile, podYAML("web", ""))
	if out := kubectl(t, kubeconfig, "apply", "-f", podFile); !strings.Contains(out, "pod/web created") {
		t.Errorf("kubectl apply: %s", out)
	}
	if out := kubectl(t, kubeconfig, "get", "pods", "-o", "wide"); !strings.Contains(out, "web ") || !strings.Contains(out, "NOMINATED NODE") {
		t.Errorf("kubectl get pods -o wide:\n%s", out)
	}
	out := kubectl(t, kubeconfig, "get", "namespaces")
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		if !strings.Contains(out, ns+" ") {
			t.Errorf("namespace %s missing:\n%s", ns, out)
		}
	}
	if out := kubectl(t, kubeconfig, "get", "node", node); !strings.Contains(out, " Ready ") {
		t.Errorf("the agent's node should be registered Ready:\n%s", out)
	}
	// A pod that runs: scheduled onto the node, started by the agent as a
	// host process. Deleted before the end (its process would outlive the
	// test's kite); killed by its marker if the test fails first.
	// The marker is the container's command line: sleep takes a fraction.
	marker := fmt.Sprintf("sleep 3600.%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() { exec.Command("pkill", "-f", marker).Run() })
	runFile := filepath.Join(t.TempDir(), "run.yaml")
	writeFile(t, runFile, []byte(`apiVersion: v1
kind: Pod
metadata: {name: run}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: c, image: busybox, command: [sh, -c, "echo hi; exec `+marker+`"]}
`))
	kubectl(t, kubeconfig, "apply", "-f", runFile)
	eventually(t, "pod run not Running", func() bool {
		out, err := tryKubectl(t, kubeconfig, "get", "pod", "run", "-o", "jsonpath={.status.phase} {.spec.nodeName}")
		return err == nil && strings.TrimSpace(out) == "Running "+node
	})
	// Capacity as a kubelet reports it (kubectl describe node divides by it).
	if out := kubectl(t, kubeconfig, "get", "node", node, "-o", "jsonpath={.status.capacity.pods} {.status.allocatable.cpu}"); strings.TrimSpace(out) != fmt.Sprintf("110 %d", runtime.NumCPU()) {
		t.Errorf("node capacity pods and allocatable cpu = %q, want \"110 %d\"", out, runtime.NumCPU())
	}
	checkAnonymous(t, kubeconfig)

	// A static pod: written aside (".tmp" names are ignored) and renamed
	// in, as an editor or a config tool saves it.
	tmp := filepath.Join(manifests, "static.yaml.tmp")
	writeFile(t, tmp, podYAML("static", ""))
	if err := os.Rename(tmp, filepath.Join(manifests, "static.yaml")); err != nil {
		t.Fatal(err)
	}
	mirror := "static-" + node
	eventually(t, "the agent logged no ADD of the static pod", func() bool {
		return loggedOperation(k, "ADD", "file", mirror+"_default")
	})
	eventually(t, "no mirror pod "+mirror, func() bool {
		out, err := tryKubectl(t, kubeconfig, "get", "pod", mirror, "-o", "name")
		return err == nil && strings.Contains(out, "pod/"+mirror)
	})
	stopCleanly(t, k, syscall.SIGTERM)

	before, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	oldURL := serverURL(t, kubeconfig)
	k = StartKite(t, args...)
	if out := kubectl(t, kubeconfig, "get", "pod", "web", "-o", "name"); !strings.Contains(out, "pod/web") {
		t.Errorf("after restart: %s", out)
	}
	// The running pod's process outlived the restart and was adopted, not
	// started again.
	if out := kubectl(t, kubeconfig, "get", "pod", "run", "-o", "jsonpath={.status.phase} {.status.containerStatuses[0].restartCount}"); strings.TrimSpace(out) != "Running 0" {
		t.Errorf("after restart, pod run: %q, want Running with 0 restarts", out)
	}
	if out, _ := exec.Command("pgrep", "-fc", marker).Output(); strings.TrimSpace(string(out)) != "1" {
		t.Errorf("after restart, %s processes of pod run, want 1", strings.TrimSpace(string(out)))
	}
	kubectl(t, kubeconfig, "delete", "pod", "run", "--wait=true", "--timeout=30s")
	if out, _ := exec.Command("pgrep", "-fc", marker).Output(); strings.TrimSpace(string(out)) != "0" {
		t.Errorf("after delete, %s processes of pod run are left", strings.TrimSpace(string(out)))
	}
	// The kubeconfig of the first run still works once pointed at the new
	// port: same CA, same token.
	old := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, old, before)
	if newURL := serverURL(t, kubeconfig); newURL != oldURL {
		kubectl(t, old, "--server", newURL, "get", "pods")
	} else {
		kubectl(t, old, "get", "pods")
	}
	stopCleanly(t, k, syscall.SIGTERM)
}

// checkAnonymous sends requests without credentials, trusting the CA of
// kubeconfig: the API refuses them with 403 (they are system:anonymous,
// whom RBAC allows the health checks and /version only, as upstream), the
// health checks answer.
func checkAnonymous(t *testing.T, kubeconfig string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(rest.AnonymousClientConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	// client-go wraps the transport: close through the wrappers, so that
	// the server's graceful stop does not wait for this connection.
	defer utilnet.CloseIdleConnectionsFor(hc.Transport)
	for path, want := range map[string]int{"/api/v1/pods": http.StatusForbidden, "/readyz": http.StatusOK} {
		resp, err := hc.Get(cfg.Host + path)
		if err != nil {
			t.Fatalf("GET %s without credentials: %v", path, err)
		}
		var body bytes.Buffer
		body.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s without credentials: %d, want %d: %s", path, resp.StatusCode, want, body.String())
		}
	}
}

func serverURL(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Host
}
