package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kite-project/kite/workload/chaos"
)

// TestChaosShortLosesNothing is the shortened kite bench chaos: writers and
// 100 selector watchers through a proxy while the API server, etcd and the
// agent are each SIGKILLed and restarted, connections cut, watches left
// unread and etcd compacted; nothing acknowledged may be lost, no watch
// event duplicated or reordered, no agent pod run twice or restarted, and
// no process left behind. It runs the agent's pods as host processes, so
// it needs what kite agent needs (root, for the process runtime).
func TestChaosShortLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault test runs about a minute")
	}
	if _, err := exec.LookPath("pgrep"); err != nil {
		t.Skip("needs pgrep to count the agent's pod processes")
	}
	dir := t.TempDir()
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	report, err := chaos.Run(ctx, chaos.Options{
		Binary: kiteBinary, Dir: dir, Duration: 30 * time.Second, FaultInterval: 4 * time.Second,
		Writers: 4, Watchers: 100, Groups: 4, Pods: 2, Log: &log,
	})
	var out bytes.Buffer
	if report != nil {
		report.Print(&out)
	}
	t.Logf("progress:\n%s\nreport:\n%s", log.String(), out.String())
	if err != nil {
		t.Fatalf("chaos run: %v", err)
	}
	if !report.OK() {
		t.Errorf("the run lost, duplicated or reordered something, or restarted a pod")
	}
	for _, f := range []string{chaos.FaultCut, chaos.FaultAPIServer, chaos.FaultEtcd, chaos.FaultAgent, chaos.FaultStall, chaos.FaultBoth, chaos.FaultCompact} {
		if report.Faults[f] == 0 {
			t.Errorf("fault %s never fired", f)
		}
	}
	if report.WritesAcknowledged == 0 || report.EventsDelivered == 0 || report.WatchRestarts == 0 {
		t.Errorf("writes acknowledged %d, events delivered %d, watch restarts %d: all must be positive for the run to have tested anything",
			report.WritesAcknowledged, report.EventsDelivered, report.WatchRestarts)
	}
	// Every process the run started is gone: the kite processes all name
	// dir, the pods' processes their run's command.
	for _, pattern := range []string{dir, report.PodCommand} {
		if out, _ := exec.Command("pgrep", "-af", "--", pattern).Output(); strings.TrimSpace(string(out)) != "" {
			t.Errorf("processes matching %q left after the run:\n%s", pattern, out)
		}
	}
}
