package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kite-project/kite/workload"
)

// TestBenchClusterMeasuresRunExecAndLogs runs `kite bench cluster`, small,
// against `kite server`: each of its three workloads reports what it did
// (pods placed by the scheduler and Ready, execs that ran, the whole log
// read back), and its namespace, pods and processes are gone afterwards.
func TestBenchClusterMeasuresRunExecAndLogs(t *testing.T) {
	needKubectl(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	awaitSupervisors(t, dir)
	k := StartKite(t, "server", "--data-dir", dir, "--secure-port=0", "--port=0", "--unsafe-no-fsync",
		"--hostname-override", "bench-node", "--node-ip", "127.0.0.1")
	defer stopWithStreamingNoise(t, k)
	kc := filepath.Join(dir, "kubeconfig")
	waitNodeReady(t, "", kc, "bench-node", "True")

	const logBytes = 2_000_000
	res := RunKite(t, 3*time.Minute, "bench", "cluster", "--kubeconfig", kc, "-o", "json",
		"--pods", "3", "--execs", "2", "--log-bytes", fmt.Sprint(logBytes), "--log-reads", "2", "--timeout", "60s")
	if res.Code != 0 {
		t.Fatalf("kite bench cluster exited %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	var report workload.Report
	if err := json.Unmarshal([]byte(res.Stdout), &report); err != nil {
		t.Fatalf("kite bench cluster -o json: %v\n%s", err, res.Stdout)
	}
	want := []struct {
		name string
		ops  int
	}{{"kubectl run → Ready", 3}, {"kubectl exec -- true", 2}, {"kubectl logs", 2}}
	if len(report.Results) != len(want) {
		t.Fatalf("results %+v, want %d", report.Results, len(want))
	}
	for i, w := range want {
		r := report.Results[i]
		if !strings.HasPrefix(r.Name, w.name) || r.Ops != w.ops || r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("result %d: %+v, want %s with %d ops and latencies", i, r, w.name, w.ops)
		}
	}
	if note := report.Results[2].Note; !strings.Contains(note, fmt.Sprintf("%d of %d bytes per read", logBytes, logBytes)) {
		t.Errorf("logs note %q: want each read to return the whole %d-byte log", note, logBytes)
	}
	if note := report.Results[0].Note; !strings.Contains(note, "create → bound") || !strings.Contains(note, "→ Running") {
		t.Errorf("run note %q: want the scheduling and start shares", note)
	}
	// The namespace goes once the agent has stopped its pods.
	ns := report.Options.Namespace
	eventually(t, "namespace "+ns+" is not gone", func() bool {
		_, err := tryKubectl(t, kc, "get", "namespace", ns)
		return err != nil
	})
}
