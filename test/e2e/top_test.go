package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestKubectlTopShowsWhatPodsUse: kite server serves the metrics API from
// its agent's summary, so kubectl top works with no metrics-server to
// install: a pod that burns CPU shows CPU, an idle one next to nothing,
// the node its own usage.
func TestKubectlTopShowsWhatPodsUse(t *testing.T) {
	needKubectl(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	StartKite(t, "server", "--data-dir", dir, "--secure-port=0", "--unsafe-no-fsync", testGraceFlag,
		"--hostname-override", "top-a", "--config", agentConfig(t), "--port", "10286", "--metric-resolution", "1s")
	kc := filepath.Join(dir, "kubeconfig")
	waitNodeReady(t, "", kc, "top-a", "True")
	kubectl(t, kc, "run", "burn", "--image=busybox", "--command", "--", "sh", "-c", "while :; do :; done")
	kubectl(t, kc, "run", "idle", "--image=busybox", "--command", "--", "sleep", "3600")
	kubectl(t, kc, "wait", "--for=condition=Ready", "pod/burn", "pod/idle", "--timeout=60s")

	var out string
	eventually(t, "kubectl top pods lists both pods", func() bool {
		var err error
		out, err = tryKubectl(t, kc, "top", "pods", "--no-headers")
		return err == nil && strings.Contains(out, "burn") && strings.Contains(out, "idle")
	})
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
	if got := kubectl(t, kc, "top", "node", "top-a", "--no-headers"); !strings.HasPrefix(got, "top-a") {
		t.Errorf("kubectl top node: %q", got)
	}
	if f := strings.Fields(kubectl(t, kc, "top", "pod", "burn", "--containers", "--no-headers")); len(f) < 4 || f[0] != "burn" || f[1] != "burn" {
		t.Errorf("kubectl top pod --containers: %q, want the pod's container", f)
	}
}
