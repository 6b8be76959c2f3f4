package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kite-project/kite/storage/etcd/embedded"
)

// readyTimeout is how long a kite process may take to say it is ready. It
// is generous: the machine running the tests may be busy.
const readyTimeout = 60 * time.Second

// Kite is a running kite process.
type Kite struct {
	t   testing.TB
	cmd *exec.Cmd

	// EtcdURL is the etcd client URL kite printed (embedded or external).
	EtcdURL string
	// EtcdTLS are the files of the embedded etcd's client certificate,
	// which kite printed with its URL (zero for an external etcd).
	EtcdTLS embedded.TLSFiles

	mu     sync.Mutex
	stdout []string     // lines printed so far
	stderr bytes.Buffer // everything printed so far
	exited chan struct{}
	err    error // Wait's error, set before exited is closed
}

// nodeEvictionHard keeps the memory signal and switches the disk signals
// off, as kind configures its nodes: the tests' pods must not wait on how
// full the test machine's disk is (below 10% available the node reports
// DiskPressure and is tainted NoSchedule, as a kubelet's would be).
const nodeEvictionHard = "--eviction-hard=memory.available<100Mi"

// withNodeEvictionHard adds nodeEvictionHard to the arguments of
// `kite server` and `kite agent` that do not set --eviction-hard.
func withNodeEvictionHard(args []string) []string {
	if len(args) == 0 || (args[0] != "server" && args[0] != "agent") {
		return args
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--eviction-hard") {
			return args
		}
	}
	return append(slices.Clone(args), nodeEvictionHard)
}

var etcdURLLine = regexp.MustCompile(`^kite: (?:embedded etcd listening on|using external etcd at) (\S+?)(?:,|$)`)

// etcdTLSFlags are the client certificate's files on the embedded etcd's
// line, as the API server's flags.
var etcdTLSFlags = regexp.MustCompile(`--etcd-cafile (\S+) --etcd-certfile (\S+) --etcd-keyfile (\S+)$`)

// StartKite runs `kite args...` and waits until it prints "kite: ready".
// The process is killed at the end of the test if it still runs.
func StartKite(t testing.TB, args ...string) *Kite {
	t.Helper()
	return StartKiteIn(t, "", args...)
}

// StartKiteIn is StartKite in the network namespace netns (see commandIn).
// A server or agent that is not given --eviction-hard runs with the disk
// signals off (nodeEvictionHard).
func StartKiteIn(t testing.TB, netns string, args ...string) *Kite {
	t.Helper()
	args = withNodeEvictionHard(args)
	k := &Kite{t: t, cmd: commandIn(context.Background(), netns, kiteBinary, args...), exited: make(chan struct{})}
	k.cmd.Stderr = &lockedWriter{mu: &k.mu, w: &k.stderr}
	out, err := k.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("start %s %v: %v", kiteBinary, args, err)
	}
	ready := make(chan struct{})
	go k.readStdout(out, ready)
	t.Cleanup(func() {
		k.cmd.Process.Kill()
		<-k.exited
	})
	select {
	case <-ready:
	case <-k.exited:
		t.Fatalf("kite %v exited before it was ready: %v\nstdout:\n%s\nstderr:\n%s", args, k.err, k.Stdout(), k.Stderr())
	case <-time.After(readyTimeout):
		t.Fatalf("kite %v not ready within %s\nstdout:\n%s\nstderr:\n%s", args, readyTimeout, k.Stdout(), k.Stderr())
	}
	return k
}

// readStdout records lines, notes the etcd URL, closes ready at
// "kite: ready" and reaps the process at EOF.
func (k *Kite) readStdout(r io.Reader, ready chan struct{}) {
	sc := bufio.NewScanner(r)
	isReady := false
	for sc.Scan() {
		line := sc.Text()
		k.mu.Lock()
		k.stdout = append(k.stdout, line)
		if m := etcdURLLine.FindStringSubmatch(line); m != nil {
			k.EtcdURL = m[1]
			if f := etcdTLSFlags.FindStringSubmatch(line); f != nil {
				k.EtcdTLS = embedded.TLSFiles{CAFile: f[1], CertFile: f[2], KeyFile: f[3]}
			}
		}
		k.mu.Unlock()
		if line == "kite: ready" && !isReady {
			isReady = true
			close(ready)
		}
	}
	k.err = k.cmd.Wait()
	close(k.exited)
}

// Stdout is what the process printed on stdout so far.
func (k *Kite) Stdout() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return strings.Join(k.stdout, "\n")
}

// Stderr is what the process printed on stderr so far.
func (k *Kite) Stderr() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.stderr.String()
}

// Stop sends sig and waits up to limit for the process to exit. It returns
// the exit code and how long the exit took.
func (k *Kite) Stop(sig syscall.Signal, limit time.Duration) (int, time.Duration) {
	k.t.Helper()
	start := time.Now()
	if err := k.cmd.Process.Signal(sig); err != nil {
		k.t.Fatalf("signal %v: %v", sig, err)
	}
	select {
	case <-k.exited:
	case <-time.After(limit):
		k.t.Fatalf("kite did not exit within %s of %v\nstdout:\n%s\nstderr:\n%s", limit, sig, k.Stdout(), k.Stderr())
	}
	took := time.Since(start)
	var exit *exec.ExitError
	if errors.As(k.err, &exit) {
		return exit.ExitCode(), took
	}
	if k.err != nil {
		k.t.Fatalf("wait for kite: %v", k.err)
	}
	return 0, took
}

// Result is a finished kite process.
type Result struct {
	Code           int
	Stdout, Stderr string
}

// RunKite runs `kite args...` to completion, which must come within limit.
func RunKite(t testing.TB, limit time.Duration, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, kiteBinary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("kite %v did not finish within %s\nstdout:\n%s\nstderr:\n%s", args, limit, stdout.String(), stderr.String())
	}
	r := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run kite %v: %v", args, err)
	}
	return r
}

// EtcdClient returns a client of the embedded etcd kite printed, with its
// client certificate, closed when the test ends.
func (k *Kite) EtcdClient(t testing.TB) *clientv3.Client {
	t.Helper()
	tlsConfig, err := k.EtcdTLS.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{k.EtcdURL}, TLS: tlsConfig, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client for %s: %v", k.EtcdURL, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}
