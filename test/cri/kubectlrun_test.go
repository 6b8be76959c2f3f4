package cri

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// TestKubectlRunInteractiveOneShotPrints is the last line of issue 28's
// story, `kubectl run client --image=busybox --rm -it -- wget -qO- web`,
// with a command that needs no Service: kubectl run -i/-it of a one-shot
// command prints what the command wrote, every time. kubectl attaches once
// the pod is Running and Ready and prints the container's log when the pod
// has already ended; an attach that lands after the command wrote and
// before it exited carries nothing. The agent reports a stdin-once
// container running only after the relist period (as the kubelet, whose
// PLEG sees a start only at its next relist), so a command that is done
// within it is reported ended and kubectl prints its log. A run whose
// container ran over the period (a very busy machine) is not counted: the
// race is then the kubelet's too.
func TestKubectlRunInteractiveOneShotPrints(t *testing.T) {
	a := startAgent(t, "cri-run-i", t.TempDir())
	ns := "kubectl-run-i"
	if _, err := a.cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The pods on this test's node (the shared server may know other
	// tests' nodes).
	overrides := fmt.Sprintf(`{"apiVersion":"v1","spec":{"nodeName":%q}}`, a.node)

	// A pod first, not counted: the node's first containers start slowly
	// (containerd reported one that ran 62 ms as running for over a
	// second), which is the race again, a kubelet's as well.
	warm := a.pod(t, "warm", func(p *v1.Pod) { p.Spec.Containers[0].Args = []string{"sleep", "3600"} })
	a.wait(t, warm, "Running", running)

	const runs = 12
	type result struct {
		args []string
		out  string
		err  error
		ran  time.Duration // how long the container ran, from containerd
	}
	results := make([]result, runs)
	var wg sync.WaitGroup
	// Two at a time: the runs are independent, and each spends most of
	// its time waiting for its pod.
	sem := make(chan struct{}, 2)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			// The story's -it as well as -i: without a terminal on
			// kubectl's stdin, -t only sets the container's tty. No --rm:
			// the test reads how long the container ran, then deletes it.
			flag := "-i"
			if i%3 == 2 {
				flag = "-it"
			}
			// A pod that ends: kubectl run's default restartPolicy is
			// Always (its --restart flag's default), under which a
			// one-shot command never ends its pod and is not held.
			restart := "--restart=Never"
			if i%2 == 1 {
				restart = "--restart=OnFailure"
			}
			name := fmt.Sprintf("client-%d", i)
			args := []string{"-n", ns, "run", name, "--image=" + critest.BusyBox, "--overrides=" + overrides,
				restart, flag, "--", "echo", fmt.Sprintf("story-answer-%d", i)}
			start := time.Now()
			out, err := kubectl(t, "", args...)
			t.Logf("run %d (%s): %v, %v: %q", i, flag, time.Since(start).Round(time.Millisecond), err, out)
			results[i] = result{args: args, out: out, err: err, ran: ranFor(t, a, ns, name)}
			zero := int64(0)
			a.cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}()
	}
	wg.Wait()
	failed, slow := 0, 0
	for i, r := range results {
		if want := fmt.Sprintf("story-answer-%d", i); r.err != nil || !strings.Contains(r.out, want) {
			if r.ran >= time.Second {
				// The machine was too slow for the relist period to
				// cover the command: reported running, as a kubelet
				// would, and kubectl attached to what had written.
				slow++
				t.Logf("kubectl %s printed nothing, but its container ran %v (over the relist period): not counted", strings.Join(r.args, " "), r.ran)
				continue
			}
			failed++
			t.Errorf("kubectl %s: %v\n%s\nwant %s in its output (the container ran %v)", strings.Join(r.args, " "), r.err, r.out, want, r.ran)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d runs did not print their command's output (%d more ran over the relist period)", failed, runs, slow)
	}
}

// ranFor is how long the container of pod name ran, from containerd's
// start and finish times (nanoseconds; the API's are seconds); 0 when
// unknown.
func ranFor(t *testing.T, a *testAgent, ns, name string) time.Duration {
	p, err := a.cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return 0
	}
	rt := critest.Runtime(t)
	list, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(p.UID)}})
	if err != nil || len(list) == 0 {
		return 0
	}
	s, err := rt.ContainerStatus(context.Background(), list[0].Id)
	if err != nil || s.FinishedAt == 0 {
		return 0
	}
	return time.Duration(s.FinishedAt - s.StartedAt)
}
