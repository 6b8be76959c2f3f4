package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The node tests run their agents with a 4 s Lease (renewed every second)
// and the controllers with a 5 s grace period, so that a stopped agent's
// node goes Unknown within seconds, not upstream's 50.
const (
	testLeaseConfig = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nnodeLeaseDurationSeconds: 4\n"
	testGraceFlag   = "--node-monitor-grace-period=5s"
)

// agentConfig writes testLeaseConfig and returns its path.
func agentConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubelet.yaml")
	writeFile(t, path, []byte(testLeaseConfig))
	return path
}

// kubeconfigFor copies the admin kubeconfig src and points its cluster
// at https://host:<src's port> with kubectl config set-cluster, as the
// README tells a user to do on another host.
func kubeconfigFor(t *testing.T, src, host string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(strings.TrimPrefix(serverURL(t, src), "https://"))
	if err != nil {
		t.Fatalf("server of %s: %v", src, err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	writeFile(t, path, b)
	kubectl(t, path, "config", "set-cluster", "kite", "--server", "https://"+net.JoinHostPort(host, port))
	return path
}

var markerSeq atomic.Int64

// newMarker returns a unique `sleep 3600.<n>` command line for a pod's
// container, and kills whatever still runs it when the test ends: a
// container's process outlives its agent by design.
func newMarker(t *testing.T) string {
	t.Helper()
	marker := fmt.Sprintf("sleep 3600.%d%03d", time.Now().UnixNano()%1e6, markerSeq.Add(1))
	t.Cleanup(func() { exec.Command("pkill", "-f", marker).Run() })
	return marker
}

// markerProcesses counts the processes running marker.
func markerProcesses(marker string) int {
	out, _ := exec.Command("pgrep", "-fc", marker).Output()
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

// podSpec says what sleeperPod makes.
type podSpec struct {
	name, marker string
	// node binds the pod ("" leaves it to the scheduler).
	node string
	// tolerationSeconds, if positive, tolerates the not-ready and
	// unreachable NoExecute taints for that long (instead of the 300 s
	// the API server adds).
	tolerationSeconds int
	// cpu is the container's cpu request, if any.
	cpu string
}

// sleeperPod is a pod whose one container runs spec.marker.
func sleeperPod(spec podSpec) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n", spec.name)
	writeSleeperSpec(&b, spec, "  ")
	return []byte(b.String())
}

// sleeperDeployment is a Deployment of one replica whose pods are
// sleeperPod's (spec.node left out) and labelled app=spec.name.
func sleeperDeployment(spec podSpec) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %[1]s}\nspec:\n  replicas: 1\n"+
		"  selector: {matchLabels: {app: %[1]s}}\n  template:\n    metadata: {labels: {app: %[1]s}}\n    spec:\n", spec.name)
	spec.node = ""
	writeSleeperSpec(&b, spec, "      ")
	return []byte(b.String())
}

// writeSleeperSpec writes the fields of sleeperPod's pod spec, each line
// indented by indent.
func writeSleeperSpec(b *strings.Builder, spec podSpec, indent string) {
	fmt.Fprintf(b, "%sterminationGracePeriodSeconds: 2\n", indent)
	if spec.node != "" {
		fmt.Fprintf(b, "%snodeName: %s\n", indent, spec.node)
	}
	if spec.tolerationSeconds > 0 {
		fmt.Fprintf(b, "%stolerations:\n", indent)
		for _, key := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
			fmt.Fprintf(b, "%s- {key: %s, operator: Exists, effect: NoExecute, tolerationSeconds: %d}\n", indent, key, spec.tolerationSeconds)
		}
	}
	fmt.Fprintf(b, "%scontainers:\n%s- name: c\n%s  image: busybox\n%s  command: [sh, -c, \"exec %s\"]\n", indent, indent, indent, indent, spec.marker)
	if spec.cpu != "" {
		fmt.Fprintf(b, "%s  resources: {requests: {cpu: %q}}\n", indent, spec.cpu)
	}
}

// applyIn writes manifest to a file and applies it with kubectl in netns.
func applyIn(t *testing.T, netns, kubeconfig string, manifest []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pod.yaml")
	writeFile(t, path, manifest)
	if out, err := tryKubectlIn(t, netns, kubeconfig, "apply", "-f", path); err != nil {
		t.Fatalf("kubectl apply:\n%s\n%v: %s", manifest, err, out)
	}
}

// getIn returns kubectl get args... -o jsonpath=path, trimmed; "" when
// kubectl fails.
func getIn(t *testing.T, netns, kubeconfig, path string, args ...string) string {
	t.Helper()
	out, err := tryKubectlIn(t, netns, kubeconfig, append(append([]string{"get"}, args...), "-o", "jsonpath="+path)...)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

const readyStatus = `{.status.conditions[?(@.type=="Ready")].status}`

// waitNodeReady waits for node's Ready condition to be status.
func waitNodeReady(t *testing.T, netns, kubeconfig, node, status string) {
	t.Helper()
	eventually(t, "node "+node+" Ready is not "+status, func() bool {
		return getIn(t, netns, kubeconfig, readyStatus, "node", node) == status
	})
}

// stopAgent stops an agent with SIGTERM; its pods keep running.
func stopAgent(t *testing.T, k *Kite) {
	t.Helper()
	stopCleanly(t, k, syscall.SIGTERM)
}
