package podsync

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestReadinessProbeFlipsReady: Ready follows an exec readiness probe
// both ways.
func TestReadinessProbeFlipsReady(t *testing.T) {
	n := startNode(t, "node-ready", Options{})
	flag := filepath.Join(t.TempDir(), "ready")
	p := n.create(t, "ready", "web", v1.RestartPolicyAlways, "exec sleep 600", func(p *v1.Pod) {
		p.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-f", flag}}},
			PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1}
	})
	n.waitPod(t, p, "Running, not Ready", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && condition(p, v1.PodReady) == v1.ConditionFalse
	})
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n.waitPod(t, p, "Ready", func(p *v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionTrue })
	os.Remove(flag)
	got := n.waitPod(t, p, "not Ready again", func(p *v1.Pod) bool { return condition(p, v1.PodReady) == v1.ConditionFalse })
	if got.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("a readiness failure restarted the container: %+v", got.Status.ContainerStatuses[0])
	}
}

// TestLivenessProbeRestarts: a failing liveness probe kills the container
// and the policy restarts it, with upstream's Killing event.
func TestLivenessProbeRestarts(t *testing.T) {
	n := startNode(t, "node-live", Options{})
	p := n.create(t, "live", "web", v1.RestartPolicyAlways, "exec sleep 600", func(p *v1.Pod) {
		p.Spec.Containers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"false"}}},
			PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1, TimeoutSeconds: 1}
	})
	n.waitPod(t, p, "restarted by the liveness probe", func(p *v1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
	})
	n.waitEvent(t, p, "Unhealthy", "")
	n.waitEvent(t, p, "Killing", "Container main failed liveness probe, will be restarted")
}
