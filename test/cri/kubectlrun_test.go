package cri

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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

// TestKubectlRunStoryLineAnswers is issue 28's story line as a user types
// it, `kubectl run client --image=busybox --rm -it -- <one-shot>`: at a
// terminal (a pseudo-terminal from script(1)), with kubectl's default
// --restart=Always, under which the pod never ends and kubectl only
// attaches; and the same with -i from a pipe that stays open. The
// command is done, and often started again, before kubectl attaches: the
// first attach session of a stdin-once container replays what the
// instance wrote, so every run prints the answer, and --rm deletes the
// pod. (Without a terminal, -it asks for no tty and for stderr; the
// runtime refuses that session for a container with a terminal and
// kubectl prints the log instead, as against a kubelet: not counted
// here.)
func TestKubectlRunStoryLineAnswers(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script(1) (util-linux) gives kubectl a terminal: %v", err)
	}
	a := startAgent(t, "cri-run-story", t.TempDir())
	ns := "kubectl-run-story"
	if _, err := a.cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	overrides := fmt.Sprintf(`{"apiVersion":"v1","spec":{"nodeName":%q}}`, a.node)
	warm := a.pod(t, "warm", func(p *v1.Pod) { p.Spec.Containers[0].Args = []string{"sleep", "3600"} })
	a.wait(t, warm, "Running", running)

	const runs = 8
	outs, errs := make([]string, runs), make([]error, runs)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			flag := "-it"
			if i%2 == 1 {
				flag = "-i"
			}
			args := []string{kubectlPath, "--kubeconfig", shared.KubeconfigPath(), "-n", ns, "run", fmt.Sprintf("client-%d", i),
				"--image=" + critest.BusyBox, "--overrides=" + overrides, "--rm", flag, "--", "echo", fmt.Sprintf("story-answer-%d", i)}
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			if flag == "-it" {
				cmd = exec.CommandContext(ctx, script, "-qfec", shellQuote(args), "/dev/null")
			}
			cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
			// A user's stdin: open for as long as kubectl runs.
			r, w, err := os.Pipe()
			if err != nil {
				errs[i] = err
				return
			}
			defer w.Close()
			cmd.Stdin = r
			start := time.Now()
			out, err := cmd.CombinedOutput()
			r.Close()
			outs[i], errs[i] = string(out), err
			t.Logf("run %d (%s): %v, %v: %q", i, flag, time.Since(start).Round(time.Millisecond), err, out)
		}()
	}
	wg.Wait()
	for i := range runs {
		want := fmt.Sprintf("story-answer-%d", i)
		if errs[i] != nil || !strings.Contains(outs[i], want) {
			t.Errorf("run %d: %v\n%s\nwant %s in the output", i, errs[i], outs[i], want)
		}
		if !strings.Contains(outs[i], fmt.Sprintf(`pod "client-%d" deleted`, i)) {
			t.Errorf("run %d: --rm did not delete the pod:\n%s", i, outs[i])
		}
	}
}

// TestOnlyTheFirstAttachReplays: the first attach session of a stdin-once
// container starts with what the instance wrote before it; a second
// session sees only what is written while it lasts, as against a
// kubelet.
func TestOnlyTheFirstAttachReplays(t *testing.T) {
	a := startAgent(t, "cri-attach-replay", t.TempDir())
	p := a.pod(t, "replay", func(p *v1.Pod) {
		c := &p.Spec.Containers[0]
		c.Stdin, c.StdinOnce = true, true
		c.Args = []string{"sh", "-c", "echo before-attach; while true; do sleep 1; echo tick; done"}
	})
	a.wait(t, p, "Running", running)
	// The line is in the log before the first session begins.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := kubectl(t, "", "-n", p.Namespace, "logs", p.Name)
		if strings.Contains(out, "before-attach") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log never showed before-attach: %q", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	attach := func() string {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlPath, "--kubeconfig", shared.KubeconfigPath(), "-n", p.Namespace, "attach", p.Name)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, _ := cmd.CombinedOutput() // ends by the timeout: the container runs on
		return string(out)
	}
	if out := attach(); !strings.Contains(out, "before-attach") || !strings.Contains(out, "tick") {
		t.Errorf("first attach: %q, want the replayed before-attach and live ticks", out)
	}
	if out := attach(); strings.Contains(out, "before-attach") || !strings.Contains(out, "tick") {
		t.Errorf("second attach: %q, want live ticks only", out)
	}
}

// shellQuote quotes args for sh -c.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
