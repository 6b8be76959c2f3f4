package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// drainDeployment is a Deployment of two sleepers whose pods become
// Ready 3 s after they start (a readiness probe's initial delay), so that
// a replacement is visibly not ready for a while.
func drainDeployment(marker string) []byte {
	return []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: c
        image: busybox
        command: [sh, -c, "exec ` + marker + `"]
        readinessProbe:
          exec: {command: ["true"]}
          initialDelaySeconds: 3
          periodSeconds: 1
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
`)
}

// safeBuffer is kubectl's output, read while it runs.
type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestKubectlDrainRespectsTheDisruptionBudget runs "kite server" (node
// drain-a) and an agent (drain-b): both replicas of a Deployment under a
// budget of minAvailable 1 run on drain-a; "kubectl drain drain-a" evicts
// one, is refused the other (429) until the replacement the scheduler put
// on drain-b is Ready, then evicts it and ends.
func TestKubectlDrainRespectsTheDisruptionBudget(t *testing.T) {
	needKubectl(t)
	t.Parallel()
	root := supervisedDir(t)
	dir := filepath.Join(root, "data")
	config := agentConfig(t)
	StartKite(t, "server", "--data-dir", dir, "--secure-port=0", "--unsafe-no-fsync", testGraceFlag,
		"--hostname-override", "drain-a", "--config", config, "--port", "10284")
	kc := filepath.Join(dir, "kubeconfig")
	agent := StartKite(t, "agent", "--kubeconfig", kc, "--hostname-override", "drain-b", "--config", config,
		"--root-dir", filepath.Join(root, "agent"), "--port", "10285", "--node-ip", "127.0.0.3")
	defer stopAgent(t, agent)
	for _, node := range []string{"drain-a", "drain-b"} {
		waitNodeReady(t, "", kc, node, "True")
	}

	// Both replicas on drain-a: drain-b is cordoned while they are placed.
	kubectl(t, kc, "cordon", "drain-b")
	applyIn(t, "", kc, drainDeployment(newMarker(t)))
	kubectl(t, kc, "rollout", "status", "deployment/web", "--timeout=60s")
	eventually(t, "the budget allows one disruption", func() bool {
		return getIn(t, "", kc, "{.status.disruptionsAllowed}", "pdb", "web") == "1"
	})
	kubectl(t, kc, "uncordon", "drain-b")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := &safeBuffer{}
	drain := exec.CommandContext(ctx, kubectlPath, "--kubeconfig", kc, "drain", "drain-a", "--ignore-daemonsets", "--timeout=100s")
	drain.Env = append(os.Environ(), "HOME="+t.TempDir())
	drain.Stdout, drain.Stderr = out, out
	start := time.Now()
	if err := drain.Run(); err != nil {
		t.Fatalf("kubectl drain: %v\n%s", err, out)
	}
	took := time.Since(start)
	if !strings.Contains(out.String(), "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Errorf("kubectl drain was never refused by the budget:\n%s", out)
	}
	if !strings.Contains(out.String(), "node/drain-a drained") {
		t.Errorf("kubectl drain:\n%s", out)
	}
	for _, p := range appPods(t, kc, "web") {
		if p.node == "drain-a" && !p.deleting {
			t.Errorf("pod %s still on the drained node", p.name)
		}
	}
	t.Logf("drain took %s", took.Round(time.Millisecond))
}
