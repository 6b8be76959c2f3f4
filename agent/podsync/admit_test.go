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
	if err := n.cs.CoreV1().Pods("admit").Delete(context.Background(), "c", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := n.cs.CoreV1().Pods("admit").Get(context.Background(), "c", metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the rejected pod stays in the API after its deletion")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
