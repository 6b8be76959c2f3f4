package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
)

// TestStreamingThroughTheAPIServer runs kite server with its agent and
// uses kubectl logs, exec and port-forward on pods the agent runs as host
// processes, through the API server to the agent's HTTPS port, and the
// errors of each as kubectl shows upstream's Status.
func TestStreamingThroughTheAPIServer(t *testing.T) {
	needKubectl(t)
	dir := filepath.Join(t.TempDir(), "data")
	const node = "streaming-node"
	awaitSupervisors(t, dir)
	k := StartKite(t, "server", "--data-dir", dir, "--secure-port=0", "--port=0", "--unsafe-no-fsync", "--hostname-override", node, "--node-ip", "127.0.0.1")
	defer stopWithStreamingNoise(t, k)
	kc := filepath.Join(dir, "kubeconfig")
	marker := fmt.Sprintf("sleep 3600.%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() { exec.Command("pkill", "-f", marker).Run() })
	port := freePort(t)
	ranFlag := filepath.Join(t.TempDir(), "ran") // pod flaky's first run leaves it
	webDir := t.TempDir()                        // also web's marker
	t.Cleanup(func() { exec.Command("pkill", "-f", "http.server.*"+webDir).Run() })
	manifest := filepath.Join(t.TempDir(), "pods.yaml")
	writeFile(t, manifest, []byte(`apiVersion: v1
kind: Pod
metadata: {name: hello}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, workingDir: /tmp, env: [{name: GREETING, value: hullo}],
     command: [sh, -c, "echo hi; sleep 0.1; echo second >&2; sleep 0.1; echo third; exec `+marker+`"]}
---
apiVersion: v1
kind: Pod
metadata: {name: ticker}
spec:
  restartPolicy: Never
  containers:
  - {name: c, image: busybox, command: [sh, -c, "for i in 1 2 3; do echo tick $i; sleep 0.5; done"]}
---
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: python, command: [python3, -m, http.server, "`+strconv.Itoa(port)+`", --bind, 127.0.0.1, --directory, `+webDir+`]}
---
apiVersion: v1
kind: Pod
metadata: {name: clock}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, command: [sh, -c, "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done # `+marker+`"]}
---
apiVersion: v1
kind: Pod
metadata: {name: flaky}
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: busybox, command: [sh, -c, "if [ -e `+ranFlag+` ]; then echo second run; exec `+marker+`; else touch `+ranFlag+`; echo first run; exit 1; fi"]}
---
apiVersion: v1
kind: Pod
metadata: {name: pending}
spec:
  schedulerName: nobody
  containers:
  - {name: c, image: busybox}
`))
	kubectl(t, kc, "apply", "-f", manifest)
	for _, p := range []string{"hello", "web", "clock"} {
		waitPhase(t, kc, p, "Running")
	}
	t.Cleanup(func() {
		tryKubectl(t, kc, "delete", "pod", "hello", "web", "ticker", "clock", "flaky", "--wait=true", "--timeout=20s")
	})

	t.Run("logs", func(t *testing.T) {
		// Running comes before the last echo.
		eventually(t, "pod hello's log incomplete", func() bool {
			out, err := tryKubectl(t, kc, "logs", "hello")
			return err == nil && strings.HasSuffix(out, "third\n")
		})
		cases := []struct {
			name string
			args []string
			want string
		}{
			{"all of it", nil, "hi\nsecond\nthird\n"},
			{"tail", []string{"--tail=2"}, "second\nthird\n"},
			{"tail zero", []string{"--tail=0"}, ""},
			{"since an hour", []string{"--since=1h"}, "hi\nsecond\nthird\n"},
			{"limit bytes", []string{"--limit-bytes=5"}, "hi\nse"},
			{"named container", []string{"-c", "c"}, "hi\nsecond\nthird\n"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if out := kubectl(t, kc, append([]string{"logs", "hello"}, c.args...)...); out != c.want {
					t.Errorf("kubectl logs hello %v = %q, want %q", c.args, out, c.want)
				}
			})
		}
		out := kubectl(t, kc, "logs", "hello", "--timestamps")
		if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT[0-9:.]+Z hi\n`).MatchString(out) {
			t.Errorf("kubectl logs --timestamps = %q, want RFC 3339 timestamps", out)
		}
	})

	t.Run("logs over websockets", func(t *testing.T) { logsOverWebsockets(t, kc, "hello", "c", "hi\nsecond\nthird\n") })

	t.Run("logs -f ends when the container does", func(t *testing.T) {
		waitPhase(t, kc, "ticker", "Running", "Succeeded")
		start := time.Now()
		out := kubectl(t, kc, "logs", "-f", "ticker")
		if out != "tick 1\ntick 2\ntick 3\n" {
			t.Errorf("kubectl logs -f ticker = %q (after %s)", out, time.Since(start))
		}
	})

	t.Run("logs --previous", func(t *testing.T) {
		// The first run exits 1; the second comes after the 10 s back-off.
		eventually(t, "pod flaky not restarted", func() bool {
			out, err := tryKubectl(t, kc, "get", "pod", "flaky", "-o", "jsonpath={.status.containerStatuses[0].restartCount} {.status.phase}")
			return err == nil && strings.TrimSpace(out) == "1 Running"
		})
		if out := kubectl(t, kc, "logs", "flaky", "--previous"); out != "first run\n" {
			t.Errorf("kubectl logs --previous = %q, want the first run's", out)
		}
		if out := kubectl(t, kc, "logs", "flaky"); out != "second run\n" {
			t.Errorf("kubectl logs = %q, want the second run's", out)
		}
	})

	t.Run("attach streams the output from now on", func(t *testing.T) {
		// Attached until three ticks came (or 30 s on a loaded machine),
		// not for a fixed window: kubectl's start alone can take a second.
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		tickLine := regexp.MustCompile(`tick (\d+)\n`)
		cmd := exec.CommandContext(ctx, kubectlPath, "--kubeconfig", kc, "attach", "clock")
		w := &untilMatches{re: tickLine, want: 3, done: cancel}
		cmd.Stdout = w
		_ = cmd.Run() // killed by cancel once enough ticks came
		out := w.buf.String()
		ticks := tickLine.FindAllStringSubmatch(out, -1)
		if len(ticks) < 3 {
			t.Fatalf("kubectl attach clock for 30 s: %q, want 3 ticks", out)
		}
		first, _ := strconv.Atoi(ticks[0][1])
		for i, m := range ticks {
			if n, _ := strconv.Atoi(m[1]); n != first+i {
				t.Errorf("tick %d after tick %d: lines lost or repeated in %q", n, first+i-1, out)
				break
			}
		}
	})

	t.Run("exec", func(t *testing.T) {
		for _, ws := range []string{"true", "false"} {
			t.Run("websockets="+ws, func(t *testing.T) {
				env := []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=" + ws}
				if out, err := kubectlEnv(t, kc, env, "", "exec", "hello", "--", "echo", "ok"); err != nil || out != "ok\n" {
					t.Errorf("kubectl exec hello -- echo ok = %q, %v", out, err)
				}
				if out, err := kubectlEnv(t, kc, env, "", "exec", "hello", "--", "sh", "-c", "echo $GREETING in $(pwd)"); err != nil || out != "hullo in /tmp\n" {
					t.Errorf("exec sees env and working dir: %q, %v", out, err)
				}
				if out, err := kubectlEnv(t, kc, env, "some input\n", "exec", "-i", "hello", "--", "cat"); err != nil || out != "some input\n" {
					t.Errorf("kubectl exec -i hello -- cat = %q, %v", out, err)
				}
				_, err := kubectlEnv(t, kc, env, "", "exec", "hello", "--", "sh", "-c", "exit 3")
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
					t.Errorf("kubectl exec of a command exiting 3: %v, want exit code 3", err)
				}
			})
		}
	})

	t.Run("exec on a terminal", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			t.Fatal(err)
		}
		u := clientsetFor(t, kc).CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("hello").SubResource("exec").
			VersionedParams(&v1.PodExecOptions{Container: "c", Command: []string{"sh", "-c", `tty; while [ "$(stty size)" = "0 0" ]; do sleep 0.05; done; stty size`}, Stdout: true, TTY: true}, scheme.ParameterCodec).URL()
		for name, newExec := range map[string]func() (remotecommand.Executor, error){
			"websocket": func() (remotecommand.Executor, error) {
				return remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
			},
			"spdy": func() (remotecommand.Executor, error) { return remotecommand.NewSPDYExecutor(cfg, "POST", u) },
		} {
			t.Run(name, func(t *testing.T) {
				ex, err := newExec()
				if err != nil {
					t.Fatal(err)
				}
				var out strings.Builder
				err = ex.StreamWithContext(t.Context(), remotecommand.StreamOptions{Stdout: &out, Tty: true, TerminalSizeQueue: &oneSize{}})
				if err != nil {
					t.Fatalf("exec on a tty: %v (%q)", err, out.String())
				}
				if !regexp.MustCompile(`^/dev/pts/\d+\r\n33 111\r\n$`).MatchString(out.String()) {
					t.Errorf("tty; stty size on a 111x33 terminal printed %q", out.String())
				}
			})
		}
	})

	t.Run("cp", func(t *testing.T) {
		// kubectl cp runs tar through exec: the host's tar, pods being
		// host processes.
		if _, err := exec.LookPath("tar"); err != nil {
			t.Skip("no tar in PATH")
		}
		src := filepath.Join(t.TempDir(), "in.txt")
		writeFile(t, src, []byte("copied through exec\n"))
		inPod := t.TempDir()
		kubectl(t, kc, "cp", src, "hello:"+inPod+"/in.txt")
		if out, err := kubectlEnv(t, kc, nil, "", "exec", "hello", "--", "cat", inPod+"/in.txt"); err != nil || out != "copied through exec\n" {
			t.Errorf("after kubectl cp into the pod: %q, %v", out, err)
		}
		back := filepath.Join(t.TempDir(), "back.txt")
		kubectl(t, kc, "cp", "hello:"+inPod+"/in.txt", back)
		if b, err := os.ReadFile(back); err != nil || string(b) != "copied through exec\n" {
			t.Errorf("kubectl cp out of the pod: %q, %v", b, err)
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		for _, ws := range []string{"true", "false"} {
			t.Run("websockets="+ws, func(t *testing.T) { portForward(t, kc, "KUBECTL_PORT_FORWARD_WEBSOCKETS="+ws, port) })
		}
	})

	t.Run("errors", func(t *testing.T) {
		ghostPort := freePort(t) // nothing listens there
		cs := clientsetFor(t, kc)
		makeDeadNode(t, cs, "ghost", ghostPort)
		ghost := filepath.Join(t.TempDir(), "ghost.yaml")
		writeFile(t, ghost, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: on-ghost}\nspec:\n  nodeName: ghost\n  containers:\n  - {name: c, image: busybox}\n"))
		kubectl(t, kc, "apply", "-f", ghost)
		cases := []struct {
			name string
			args []string
			want string
		}{
			// kubectl logs checks the container itself; the server's answer:
			{"unknown container", []string{"get", "--raw", "/api/v1/namespaces/default/pods/hello/log?container=nope"}, "Error from server (BadRequest): container nope is not valid for pod hello"},
			{"logs of an unknown pod", []string{"logs", "nosuch"}, `error from server (NotFound): pods "nosuch" not found`},
			{"exec into an unknown container", []string{"exec", "hello", "-c", "nope", "--", "true"}, "Error from server (BadRequest): container nope is not valid for pod hello"},
			{"exec into an unscheduled pod", []string{"exec", "pending", "--", "true"}, "Error from server (BadRequest): pod pending does not have a host assigned"},
			{"logs of a pod on a dead node", []string{"logs", "on-ghost"}, fmt.Sprintf(`Error from server: Get "https://127.0.0.1:%d/containerLogs/default/on-ghost/c": dial tcp 127.0.0.1:%d: connect: connection refused`, ghostPort, ghostPort)},
			{"no previous container", []string{"logs", "hello", "--previous"}, `Error from server (BadRequest): previous terminated container "c" in pod "hello" not found`},
			{"bad --since", []string{"logs", "hello", "--since=yesterday"}, `invalid argument "yesterday" for "--since" flag`},
			{"exec into an unknown pod", []string{"exec", "nosuch", "--", "true"}, `Error from server (NotFound): pods "nosuch" not found`},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				out, err := tryKubectl(t, kc, c.args...)
				if err == nil || !strings.Contains(out, c.want) {
					t.Errorf("kubectl %v = %q, %v; want an error with %q", c.args, out, err, c.want)
				}
			})
		}
		// The API server's own check of the options: upstream's 422.
		out, err := tryKubectl(t, kc, "get", "--raw", "/api/v1/namespaces/default/pods/hello/log?sinceSeconds=0")
		if err == nil || !strings.Contains(out, `PodLogOptions "hello" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0`) {
			t.Errorf("sinceSeconds=0: %q, %v", out, err)
		}
		// An unscheduled pod has an empty log, as upstream.
		if out, err := tryKubectl(t, kc, "logs", "pending"); err != nil || out != "" {
			t.Errorf("kubectl logs of an unscheduled pod = %q, %v; want empty", out, err)
		}
	})
}

// oneSize is a terminal of 111 columns and 33 rows that never resizes:
// one size, then nil, which ends the client's resize stream.
type oneSize struct{ sent atomic.Bool }

func (o *oneSize) Next() *remotecommand.TerminalSize {
	if o.sent.Swap(true) {
		return nil
	}
	return &remotecommand.TerminalSize{Width: 111, Height: 33}
}

// stopWithStreamingNoise stops k with SIGTERM and wants exit code 0 and
// nothing on stderr but the lines upstream's streaming libraries log
// through klog when a client goes away mid-stream (kube-apiserver logs
// them too; kite routes no global klog output elsewhere).
func stopWithStreamingNoise(t *testing.T, k *Kite) {
	t.Helper()
	code, _ := k.Stop(syscall.SIGTERM, shutdownLimit)
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM\nstderr:\n%s", code, k.Stderr())
	}
	noise := regexp.MustCompile(`"Error proxying data from client to backend"|"Error on socket receive"|"Error proxying data from backend to client"`)
	for line := range strings.SplitSeq(strings.TrimSpace(k.Stderr()), "\n") {
		if line != "" && !noise.MatchString(line) {
			t.Errorf("stderr: %s", line)
		}
	}
}

func waitPhase(t *testing.T, kc, pod string, phases ...string) {
	t.Helper()
	eventually(t, "pod "+pod+" not "+strings.Join(phases, " or "), func() bool {
		out, err := tryKubectl(t, kc, "get", "pod", pod, "-o", "jsonpath={.status.phase}")
		for _, p := range phases {
			if err == nil && strings.TrimSpace(out) == p {
				return true
			}
		}
		return false
	})
}

// kubectlEnv runs kubectl with extra environment and stdin, returning its
// standard output only.
func kubectlEnv(t *testing.T, kc string, env []string, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), pollTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, append([]string{"--kubeconfig", kc}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Logf("kubectl %v stderr: %s", args, stderr.String())
	}
	return string(out), err
}

func portForward(t *testing.T, kc, env string, port int) {
	ctx, cancel := context.WithTimeout(t.Context(), pollTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlPath, "--kubeconfig", kc, "port-forward", "pod/web", ":"+strconv.Itoa(port))
	cmd.Env = append(os.Environ(), env)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	// "Forwarding from 127.0.0.1:40123 -> 8000"
	re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> ` + strconv.Itoa(port))
	lines := bufio.NewScanner(stdout)
	local := ""
	for lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			local = m[1]
			break
		}
	}
	if local == "" {
		t.Fatalf("kubectl port-forward said no local port; stderr: %s", stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	for i := range 3 { // several connections over one tunnel
		resp, err := http.Get("http://127.0.0.1:" + local + "/")
		if err != nil {
			t.Fatalf("GET %d through port-forward: %v; stderr: %s", i, err, stderr.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Directory listing") {
			t.Errorf("GET %d through port-forward: %d %q", i, resp.StatusCode, body)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func clientsetFor(t *testing.T, kc string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// makeDeadNode registers a Node whose daemon endpoint nobody serves.
func makeDeadNode(t *testing.T, cs *kubernetes.Clientset, name string, port int) {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "node "+name+"'s status not written", func() bool {
		n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}}
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
		_, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{})
		if err != nil { // the node lifecycle controller wrote it meanwhile
			n, _ = cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		}
		return err == nil && n != nil
	})
}

// untilMatches collects what is written to it and calls done once re
// matches want times. Only exec's copying goroutine writes to it, and
// Cmd.Run returns after that goroutine ends, so buf is read afterwards
// without a lock.
type untilMatches struct {
	re   *regexp.Regexp
	want int
	done func()
	buf  bytes.Buffer
}

func (u *untilMatches) Write(p []byte) (int, error) {
	u.buf.Write(p)
	if len(u.re.FindAllIndex(u.buf.Bytes(), -1)) >= u.want {
		u.done()
	}
	return len(p), nil
}
