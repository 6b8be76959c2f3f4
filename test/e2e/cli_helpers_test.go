package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kubectlPath is the kubectl the CLI tests use, as a user's.
const kubectlPath = "/usr/bin/kubectl"

// pollTimeout bounds how long a CLI test waits for something to happen:
// generous, the machine may be busy.
const pollTimeout = 60 * time.Second

// needKubectl skips the test where kubectl is not installed.
func needKubectl(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skipf("no %s: %v", kubectlPath, err)
	}
}

// kubectl runs kubectl --kubeconfig kubeconfig args... and returns its
// combined output; the test fails if it does not succeed.
func kubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := tryKubectl(t, kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kubectlIn is kubectl run in the network namespace netns.
func kubectlIn(t *testing.T, netns, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := tryKubectlIn(t, netns, kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func tryKubectl(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	return tryKubectlIn(t, "", kubeconfig, args...)
}

// tryKubectlIn is tryKubectl run in the network namespace netns ("" is
// the test's own).
func tryKubectlIn(t *testing.T, netns, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), pollTimeout)
	defer cancel()
	out, err := commandIn(ctx, netns, kubectlPath, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// commandIn runs name in the network namespace netns (one of
// /run/netns, as ip netns names them), or in the test's own when netns is
// "". nsenter enters only the network namespace and then execs name, so
// the process is name itself (its PID, its signals) and keeps the mounts
// (cgroups included) that `ip netns exec` would replace.
func commandIn(ctx context.Context, netns, name string, args ...string) *exec.Cmd {
	if netns == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=/run/netns/" + netns, "--", name}, args...)...)
}

// eventually polls cond every 100 ms until it holds, failing the test with
// what after pollTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(pollTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", pollTimeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// loggedOperation says whether k logged the agent operation op from source
// for the pod of full name name_namespace.
func loggedOperation(k *Kite, op, source, podFullName string) bool {
	for line := range strings.SplitSeq(k.Stdout(), "\n") {
		if strings.Contains(line, `"Pod operation"`) && strings.Contains(line, `op="`+op+`"`) &&
			strings.Contains(line, `source="`+source+`"`) && strings.Contains(line, `"`+podFullName+`"`) {
			return true
		}
	}
	return false
}

const podManifest = `apiVersion: v1
kind: Pod
metadata:
  name: NAME
spec:
  NODE
  containers:
  - name: c
    image: busybox
`

// podYAML is a pod manifest; node, if not empty, binds it.
func podYAML(name, node string) []byte {
	s := strings.Replace(podManifest, "NAME", name, 1)
	if node != "" {
		return []byte(strings.Replace(s, "NODE", "nodeName: "+node, 1))
	}
	return []byte(strings.Replace(s, "  NODE\n", "", 1))
}
