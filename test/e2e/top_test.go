package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKubectlTopShowsWhatPodsUse: kite server serves the metrics API from
// its agent's summary, so kubectl top works with no metrics-server to
// install: a pod that burns CPU shows CPU, an idle one next to nothing,
// the node its own usage; and a CPU HPA scales a burning Deployment up.
func TestKubectlTopShowsWhatPodsUse(t *testing.T) {
	needKubectl(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	// The pods burn CPU: nothing of theirs may outlive the test (their
	// supervisors outlive the server by design, their loops would run on).
	awaitSupervisors(t, dir)
	marker := fmt.Sprintf("top-%d", time.Now().UnixNano())
	t.Cleanup(func() { exec.Command("pkill", "-f", marker).Run() })
	burn := "while :; do :; done # " + marker
	StartKite(t, "server", "--data-dir", dir, "--secure-port=0", "--unsafe-no-fsync", testGraceFlag,
		"--hostname-override", "top-a", "--config", agentConfig(t), "--port", "10286", "--metric-resolution", "1s")
	kc := filepath.Join(dir, "kubeconfig")
	waitNodeReady(t, "", kc, "top-a", "True")
	kubectl(t, kc, "run", "burn", "--image=busybox", "--command", "--", "sh", "-c", burn)
	kubectl(t, kc, "run", "idle", "--image=busybox", "--command", "--", "sh", "-c", "while :; do sleep 1; done # "+marker)

	// Pods first start, then two readings of their usage: a loaded
	// machine takes its time.
	var out string
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		var err error
		out, err = tryKubectl(t, kc, "top", "pods", "--no-headers")
		if err == nil && strings.Contains(out, "burn") && strings.Contains(out, "idle") {
			break
		}
		if time.Now().After(deadline) {
			pods, _ := tryKubectl(t, kc, "get", "pods", "-o", "wide")
			t.Fatalf("kubectl top pods never listed both pods: %v %s\npods:\n%s", err, out, pods)
		}
	}
	cpu := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasSuffix(f[1], "m") {
			t.Fatalf("kubectl top pods: %q", out)
		}
		cpu[f[0]], _ = strconv.Atoi(strings.TrimSuffix(f[1], "m"))
	}
	// A busy loop gets at least a share of a loaded 2-core machine; an
	// idle sleep uses next to nothing.
	if cpu["burn"] < 20 || cpu["idle"] > 10 || cpu["burn"] <= cpu["idle"] {
		t.Errorf("CPU burn %dm idle %dm:\n%s", cpu["burn"], cpu["idle"], out)
	}
	if got := topEventually(t, kc, "node", "top-a", "--no-headers"); !strings.HasPrefix(got, "top-a") {
		t.Errorf("kubectl top node: %q", got)
	}
	if f := strings.Fields(topEventually(t, kc, "pod", "burn", "--containers", "--no-headers")); len(f) < 4 || f[0] != "burn" || f[1] != "burn" {
		t.Errorf("kubectl top pod --containers: %q, want the pod's container", f)
	}

	// An HPA on a Deployment whose pod burns far more than its request
	// scales it up to its maximum.
	applyIn(t, "", kc, []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: hot}
spec:
  replicas: 1
  selector: {matchLabels: {app: hot}}
  template:
    metadata: {labels: {app: hot}}
    spec:
      containers:
      - name: hot
        image: busybox
        command: [sh, -c, "`+burn+`"]
        resources: {requests: {cpu: 5m}}
`))
	kubectl(t, kc, "autoscale", "deployment", "hot", "--cpu-percent=50", "--min=1", "--max=3")
	for deadline := time.Now().Add(3 * time.Minute); getIn(t, "", kc, "{.spec.replicas}", "deployment", "hot") != "3"; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			hpa, _ := tryKubectl(t, kc, "describe", "hpa", "hot")
			t.Fatalf("the HPA did not scale the Deployment to 3:\n%s", hpa)
		}
	}
	if got := getIn(t, "", kc, `{.status.conditions[?(@.type=="ScalingActive")].status}`, "hpa", "hot"); got != "True" {
		t.Errorf("ScalingActive %q, want True", got)
	}
	hpaScalesDownOnceTheLoadStops(t, kc, "hot")
}

// topEventually is kubectl top with args, asked again for up to a minute
// while it fails. Metrics are those of the last round whose scrape of the
// node succeeded and read it twice: a scrape past its bound (the
// resolution, 1 s here) leaves the node and its pods out for a round or
// two, as metrics-server does.
func topEventually(t *testing.T, kc string, args ...string) string {
	t.Helper()
	args = append([]string{"top"}, args...)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		out, err := tryKubectl(t, kc, args...)
		if err == nil {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
