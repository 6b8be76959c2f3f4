package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestAttachReachesStdin runs `kite server` and pods whose containers keep
// stdin open (stdin: true), as the process runtime's supervisor now holds
// it: `kubectl attach -i` writes reach the container, over WebSocket and
// SPDY; with stdinOnce the container's stdin ends with the session (cat
// exits, kubectl with it); without, it stays open for the next session;
// `kubectl run -i --rm` passes piped stdin; and `kubectl run -it --rm --
// sh` on a terminal runs a shell that answers,
// sees the client's terminal size and TERM, exits, and is deleted.
func TestAttachReachesStdin(t *testing.T) {
	needKubectl(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	awaitSupervisors(t, dir)
	k := StartKite(t, "server", "--data-dir", dir, "--secure-port=0", "--port=0", "--unsafe-no-fsync",
		"--hostname-override", "attach-node", "--node-ip", "127.0.0.1")
	defer stopWithStreamingNoise(t, k)
	kc := filepath.Join(dir, "kubeconfig")
	marker := fmt.Sprintf("attach-%d", time.Now().UnixNano())
	t.Cleanup(func() { exec.Command("pkill", "-f", marker).Run() })
	manifest := filepath.Join(t.TempDir(), "pods.yaml")
	var b strings.Builder
	for _, name := range []string{"once-ws", "once-spdy"} {
		fmt.Fprintf(&b, `apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, stdin: true, stdinOnce: true, command: [sh, -c, "cat # %s"]}
---
`, name, marker)
	}
	fmt.Fprintf(&b, `apiVersion: v1
kind: Pod
metadata: {name: keep}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, stdin: true, command: [sh, -c, "while read l; do echo got $l; done; echo stdin ended # %s"]}
`, marker)
	writeFile(t, manifest, []byte(b.String()))
	kubectl(t, kc, "apply", "-f", manifest)
	for _, p := range []string{"once-ws", "once-spdy", "keep"} {
		waitPhase(t, kc, p, "Running")
	}
	t.Cleanup(func() {
		tryKubectl(t, kc, "delete", "pod", "once-ws", "once-spdy", "keep", "--wait=true", "--timeout=20s")
	})

	t.Run("stdinOnce: the session's end is the container's", func(t *testing.T) {
		for pod, ws := range map[string]string{"once-ws": "true", "once-spdy": "false"} {
			env := []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=" + ws}
			out, err := kubectlEnv(t, kc, env, "hello\nworld\n", "attach", "-i", pod)
			if err != nil || out != "hello\nworld\n" {
				t.Errorf("kubectl attach -i %s (websockets %s) with hello, world = %q, %v; want them echoed by cat", pod, ws, out, err)
			}
			waitPhase(t, kc, pod, "Succeeded")
			if out := kubectl(t, kc, "logs", pod); out != "hello\nworld\n" {
				t.Errorf("kubectl logs %s = %q, want what cat echoed", pod, out)
			}
		}
	})

	t.Run("without stdinOnce stdin outlives the session", func(t *testing.T) {
		for _, word := range []string{"one", "two"} {
			// The container's stdin stays open, so the session's
			// output does not end: kubectl is stopped once the answer
			// came.
			out := attachFor(t, kc, word+"\n", func(out string) bool { return strings.Contains(out, "got "+word) }, "attach", "-i", "keep")
			if !strings.Contains(out, "got "+word+"\n") || strings.Contains(out, "stdin ended") {
				t.Errorf("kubectl attach -i keep with %q: %q, want only its answer", word, out)
			}
		}
		waitPhase(t, kc, "keep", "Running")
		if out := kubectl(t, kc, "logs", "keep"); out != "got one\ngot two\n" {
			t.Errorf("kubectl logs keep = %q, want both sessions' answers", out)
		}
	})

	t.Run("kubectl run -i --rm with piped stdin", func(t *testing.T) {
		out, err := kubectlEnv(t, kc, nil, "piped in\n", "run", "pipe", "--image=busybox", "--restart=Never", "-i", "--rm",
			"--command", "--", "sh", "-c", "cat; echo cat done # "+marker)
		if err != nil || !strings.HasPrefix(out, "piped in\ncat done\n") || !strings.Contains(out, `pod "pipe" deleted`) {
			t.Errorf("kubectl run -i --rm with stdin %q: %q, %v; want it echoed, then the pod deleted", "piped in", out, err)
		}
	})

	t.Run("kubectl run -it --rm on a terminal", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), pollTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlPath, "--kubeconfig", kc, "run", "term", "--image=busybox", "--restart=Never",
			"-it", "--rm", "--command", "--", "sh", "-c", "exec sh # "+marker)
		ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 33, Cols: 111})
		if err != nil {
			t.Fatalf("start kubectl run -it on a terminal: %v", err)
		}
		defer ptmx.Close()
		var mu sync.Mutex
		var screen bytes.Buffer
		go func() { // ends when kubectl and the terminal are gone
			buf := make([]byte, 4096)
			for {
				n, err := ptmx.Read(buf)
				mu.Lock()
				screen.Write(buf[:n])
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		shows := func(what string) bool {
			mu.Lock()
			defer mu.Unlock()
			return strings.Contains(screen.String(), what)
		}
		// The shell's first prompt may come before kubectl attached, as
		// upstream's ("If you don't see a command prompt, try pressing
		// enter."): type until it answers.
		eventually(t, "the shell in pod term does not answer", func() bool {
			ptmx.WriteString("echo sum-$((40+2)) $TERM\r")
			time.Sleep(300 * time.Millisecond)
			return shows("sum-42 xterm")
		})
		ptmx.WriteString("stty size\r")
		eventually(t, "stty size in pod term does not give kubectl's terminal's 33 111", func() bool { return shows("33 111") })
		ptmx.WriteString("exit 0\r")
		if err := cmd.Wait(); err != nil {
			mu.Lock()
			t.Errorf("kubectl run -it --rm after exit: %v\n%s", err, screen.String())
			mu.Unlock()
		}
		eventually(t, "pod term is not deleted (--rm)", func() bool {
			_, err := tryKubectl(t, kc, "get", "pod", "term")
			return err != nil
		})
	})
}

// attachFor runs kubectl args... with stdin until done holds for its
// output (or pollTimeout), then stops it and returns what it wrote.
func attachFor(t *testing.T, kc, stdin string, done func(string) bool, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", kc}, args...)...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() { // ends when kubectl is gone
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			out.Write(buf[:n])
			if err != nil || done(out.String()) {
				return
			}
		}
	}()
	select {
	case <-read:
	case <-time.After(pollTimeout):
		t.Errorf("kubectl %v: no answer within %s", args, pollTimeout)
	}
	cancel()
	cmd.Wait()
	<-read
	return out.String()
}
