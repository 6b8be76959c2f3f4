package podsync

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
)

// TestStdinOnceStartIsReportedAfterTheRelistPeriod: a container with stdin
// and stdinOnce (kubectl run -i/-it) is reported running only once it has
// run for the relist period (1 s), and the pod is synced when that ends
// without any other event (the resync interval is an hour here); a one-shot
// command that ends within it is never reported running, and its pod
// Succeeds (restartPolicy OnFailure, as kubectl run -i gives). A container
// without stdinOnce runs beside them and is reported running (its timing
// is the create→Running benchmark's, bench/).
func TestStdinOnceStartIsReportedAfterTheRelistPeriod(t *testing.T) {
	n := startNode(t, "node-stdinonce", Options{ResyncInterval: time.Hour})
	const ns, hold = "stdinonce", DefaultRelistPeriod
	interactive := func(p *v1.Pod) { p.Spec.Containers[0].Stdin, p.Spec.Containers[0].StdinOnce = true, true }
	n.namespace(t, ns)
	// Every status the API shows, from before the pods exist.
	w, err := n.cs.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{FieldSelector: fields.Everything().String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	firstRunning := map[string]time.Time{}
	ended := map[string]v1.PodPhase{}
	shell := n.create(t, ns, "shell", v1.RestartPolicyOnFailure, "exec sleep 600", interactive)
	oneShot := n.create(t, ns, "oneshot", v1.RestartPolicyOnFailure, "echo hi", interactive)
	n.create(t, ns, "plain", v1.RestartPolicyOnFailure, "exec sleep 600", nil)
	deadline := time.After(30 * time.Second)
	for firstRunning["shell"].IsZero() || firstRunning["plain"].IsZero() || ended["oneshot"] == "" {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended")
			}
			p, ok := ev.Object.(*v1.Pod)
			if !ok || len(p.Status.ContainerStatuses) == 0 {
				continue
			}
			if p.Status.ContainerStatuses[0].State.Running != nil {
				if _, seen := firstRunning[p.Name]; !seen {
					firstRunning[p.Name] = time.Now()
				}
			}
			if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
				ended[p.Name] = p.Status.Phase
			}
		case <-deadline:
			t.Fatalf("reported running: %v, ended: %v; want shell and plain running, oneshot ended", firstRunning, ended)
		}
	}
	// When each instance started and ended, to the nanosecond.
	instance := func(p *v1.Pod) *runtimeapi.ContainerStatus {
		list, err := n.rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(p.UID)}})
		if err != nil || len(list) != 1 {
			t.Fatalf("containers of %s: %v, %v; want one", p.Name, list, err)
		}
		s, err := n.rt.ContainerStatus(context.Background(), list[0].Id)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := instance(shell); firstRunning["shell"].Sub(time.Unix(0, s.StartedAt)) < hold {
		t.Errorf("shell reported running %v after it started; want the relist period, %v, at least",
			firstRunning["shell"].Sub(time.Unix(0, s.StartedAt)), hold)
	}
	if s := instance(oneShot); !firstRunning["oneshot"].IsZero() && s.FinishedAt-s.StartedAt < int64(hold) {
		t.Errorf("oneshot, which ran %v, was reported running; want it reported ended only", time.Duration(s.FinishedAt-s.StartedAt))
	}
	if ended["oneshot"] != v1.PodSucceeded {
		t.Errorf("oneshot ended %s, want Succeeded", ended["oneshot"])
	}
}
