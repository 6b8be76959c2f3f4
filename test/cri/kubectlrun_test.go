package cri

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// within it is reported ended and kubectl prints its log. Without that
// (the agent reporting Running at once) about half of these runs printed
// nothing.
func TestKubectlRunInteractiveOneShotPrints(t *testing.T) {
	a := startAgent(t, "cri-run-i", t.TempDir())
	ns := "kubectl-run-i"
	if _, err := a.cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The pods on this test's node (the shared server may know other
	// tests' nodes).
	overrides := fmt.Sprintf(`{"apiVersion":"v1","spec":{"nodeName":%q}}`, a.node)

	const runs = 12
	type result struct {
		args []string
		out  string
		err  error
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
			// kubectl's stdin, -t only sets the container's tty.
			flag := "-i"
			if i%3 == 2 {
				flag = "-it"
			}
			args := []string{"-n", ns, "run", fmt.Sprintf("client-%d", i), "--image=" + critest.BusyBox, "--overrides=" + overrides,
				"--rm", flag, "--", "echo", fmt.Sprintf("story-answer-%d", i)}
			out, err := kubectl(t, "", args...)
			results[i] = result{args, out, err}
		}()
	}
	wg.Wait()
	failed := 0
	for i, r := range results {
		if want := fmt.Sprintf("story-answer-%d", i); r.err != nil || !strings.Contains(r.out, want) {
			failed++
			t.Errorf("kubectl %s: %v\n%s\nwant %s in its output", strings.Join(r.args, " "), r.err, r.out, want)
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d runs did not print their command's output", failed, runs)
	}
}
