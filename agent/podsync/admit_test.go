package podsync

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAdmissionRejectsBeyondMaxPods: a pod beyond --max-pods is Failed
// with OutOfpods and never runs; deleting it completes at once.
func TestAdmissionRejectsBeyondMaxPods(t *testing.T) {
	n := startNode(t, "node-admit", Options{MaxPods: 2})
	a := n.create(t, "admit", "a", v1.RestartPolicyAlways, "exec sleep 600", nil)
	b := n.create(t, "admit", "b", v1.RestartPolicyAlways, "exec sleep 600", nil)
	n.waitPod(t, a, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	n.waitPod(t, b, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	c := n.create(t, "admit", "c", v1.RestartPolicyAlways, "exec sleep 600", nil)
	c = n.waitPod(t, c, "rejected", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	const msg = "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
	if c.Status.Reason != "OutOfpods" || c.Status.Message != "Pod was rejected: "+msg {
		t.Errorf("reason %q message %q", c.Status.Reason, c.Status.Message)
	}
	n.waitEvent(t, c, "OutOfpods", msg)
	if cs := containersOf(t, n.rt, c); len(cs) != 0 {
		t.Errorf("a rejected pod has containers: %v", cs)
	}
	deleteAndWait(t, n, "admit", "c", 20*time.Second)
}

// deleteAndWait deletes a pod and waits until the API has it no more.
func deleteAndWait(t *testing.T, n *node, ns, name string, limit time.Duration) {
	t.Helper()
	if err := n.cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(limit)
	for {
		if _, err := n.cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s stays in the API after its deletion", ns, name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAdmissionRejectsTakenHostPort: a pod asking for a host port an
// admitted pod holds is Failed with the kubelet's NodePorts reason and
// never runs; another port runs beside it, and the port is free again
// once its holder is gone.
func TestAdmissionRejectsTakenHostPort(t *testing.T) {
	n := startNode(t, "node-hostport", Options{})
	withHostPort := func(port int32) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 8080, HostPort: port}}
		}
	}
	running := func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }
	a := n.create(t, "hostport", "a", v1.RestartPolicyAlways, "exec sleep 600", withHostPort(21017))
	n.waitPod(t, a, "Running", running)
	b := n.create(t, "hostport", "b", v1.RestartPolicyAlways, "exec sleep 600", withHostPort(21017))
	c := n.create(t, "hostport", "c", v1.RestartPolicyAlways, "exec sleep 600", withHostPort(21018))
	b = n.waitPod(t, b, "rejected", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	const msg = "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
	if b.Status.Reason != "NodePorts" || b.Status.Message != "Pod was rejected: "+msg {
		t.Errorf("reason %q message %q", b.Status.Reason, b.Status.Message)
	}
	n.waitEvent(t, b, "NodePorts", msg)
	if cs := containersOf(t, n.rt, b); len(cs) != 0 {
		t.Errorf("a rejected pod has containers: %v", cs)
	}
	n.waitPod(t, c, "Running", running)

	deleteAndWait(t, n, "hostport", "a", 30*time.Second)
	d := n.create(t, "hostport", "d", v1.RestartPolicyAlways, "exec sleep 600", withHostPort(21017))
	n.waitPod(t, d, "Running", running)
}
