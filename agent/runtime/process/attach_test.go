package process

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kiteruntime "github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// syncBuffer is a bytes.Buffer safe for one writer and polling readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAttachStdinOnceEndsWithTheSession: cat's stdin is the session's, it
// gets EOF when the session's stdin ends, and what it echoed reaches the
// session and the log. The runtime's directory is long enough that the
// socket's own path would not fit in sun_path.
func TestAttachStdinOnceEndsWithTheSession(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true, RootDir: filepath.Join(t.TempDir(), strings.Repeat("long", 20))})
	cfg := containerConfig("cat", "cat")
	cfg.Stdin, cfg.StdinOnce = true, true
	id := f.run(cfg)
	if n := len(filepath.Join(f.root, containersDir, id, supervisor.AttachSocket)); n <= 108 {
		t.Fatalf("socket path of %d bytes: the test wants one longer than sun_path", n)
	}
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.rt.Attach(ctx, id, strings.NewReader("hello\nworld\n"), &stdout, &stderr, nil); err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if got := stdout.String(); got != "hello\nworld\n" {
		t.Errorf("stdout %q, want cat's echo", got)
	}
	if st := f.waitExited(id, 5*time.Second); st.ExitCode != 0 {
		t.Errorf("cat exited %d, want 0 at its stdin's end", st.ExitCode)
	}
	f.waitLog("cat", "world", time.Second)
	// Its stdin is gone: a second session sees it exited.
	if err := f.rt.Attach(ctx, id, strings.NewReader("again\n"), &stdout, &stderr, nil); err == nil {
		t.Errorf("Attach to an exited container: no error")
	}
}

// TestAttachStdinOutlivesSessions: without stdinOnce each session's input
// reaches the container and its end does not end the container's stdin.
func TestAttachStdinOutlivesSessions(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	cfg := containerConfig("reader", "sh", "-c", "while read l; do echo got $l; echo err $l >&2; done; echo ended")
	cfg.Stdin = true
	id := f.run(cfg)
	for _, word := range []string{"one", "two"} {
		var stdout, stderr syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.rt.Attach(ctx, id, strings.NewReader(word+"\n"), &stdout, &stderr, nil) }()
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(stderr.String(), "err "+word) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Attach (%s): %v", word, err)
		}
		if stdout.String() != "got "+word+"\n" || stderr.String() != "err "+word+"\n" {
			t.Errorf("session %s: stdout %q, stderr %q", word, stdout.String(), stderr.String())
		}
	}
	if st := f.status(id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("after two sessions the container is %v, want running (its stdin open)", st.State)
	}
}

// TestAttachOnATerminal: a container with a tty is its session's leader
// on a terminal that the session types into and sizes; all it writes
// comes back on stdout, with a terminal's line endings.
func TestAttachOnATerminal(t *testing.T) {
	forEachStartPath(t, func(t *testing.T, f *fixture, prepare func(*runtimeapi.ContainerConfig)) {
		cfg := containerConfig("term", "sh", "-c", `read l; while [ "$(stty size)" = "0 0" ]; do sleep 0.05; done; tty; stty size; echo got $l $TERM; echo to-stderr >&2`)
		cfg.Stdin, cfg.StdinOnce, cfg.Tty = true, true, true
		prepare(cfg)
		id := f.run(cfg)
		var stdout, stderr syncBuffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resize := make(chan kiteruntime.TerminalSize, 1)
		resize <- kiteruntime.TerminalSize{Width: 111, Height: 33}
		stdinR, stdinW := io.Pipe()
		go stdinW.Write([]byte("typed\r")) // ends when Attach has read it
		defer stdinW.Close()
		if err := f.rt.Attach(ctx, id, stdinR, &stdout, &stderr, resize); err != nil {
			t.Fatalf("Attach: %v", err)
		}
		out := stdout.String()
		for _, want := range []string{"typed\r\n", "/dev/pts/", "33 111\r\n", "got typed xterm\r\n", "to-stderr\r\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout %q: no %q", out, want)
			}
		}
		if stderr.String() != "" {
			t.Errorf("stderr %q: a terminal has one stream", stderr.String())
		}
		f.waitExited(id, 5*time.Second)
	})
}

func TestAttachWithoutStdinOrTTYIsUnsupported(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	id := f.run(containerConfig("plain", "sleep", "10"))
	err := f.rt.Attach(context.Background(), id, strings.NewReader("x"), io.Discard, io.Discard, nil)
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Attach to a container without stdin: %v, want errors.ErrUnsupported", err)
	}
	if err := f.rt.StopContainer(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
}

// TestAttachSlowSessionNeverHoldsTheContainer: a session that stops
// reading is dropped; the container's output goes on to its log.
func TestAttachSlowSessionNeverHoldsTheContainer(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	cfg := containerConfig("loud", "sh", "-c", "read l; head -c 30000000 /dev/zero; echo; echo finished")
	cfg.Stdin = true
	id := f.run(cfg)
	stuckR, stuckW := io.Pipe() // nobody reads: the session's writes block
	done := make(chan error, 1)
	go func() {
		done <- f.rt.Attach(context.Background(), id, strings.NewReader("go\n"), stuckW, io.Discard, nil)
	}()
	f.waitLog("loud", "finished", 20*time.Second)
	if st := f.waitExited(id, 5*time.Second); st.ExitCode != 0 {
		t.Errorf("exit code %d", st.ExitCode)
	}
	stuckR.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Attach of the dropped session: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Attach did not return once its writer failed")
	}
}

// TestAttachAfterAgentRestart: the supervisor, not the agent, holds the
// container's stdin, so a new runtime over the same root (a restarted
// agent) attaches to it.
func TestAttachAfterAgentRestart(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	cfg := containerConfig("cat", "cat")
	cfg.Stdin, cfg.StdinOnce = true, true
	id := f.run(cfg)
	again, err := New(Options{RootDir: f.root, NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	var stdout syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := again.Attach(ctx, id, strings.NewReader("after restart\n"), &stdout, io.Discard, nil); err != nil {
		t.Fatalf("Attach through the new runtime: %v", err)
	}
	if got := stdout.String(); got != "after restart\n" {
		t.Errorf("stdout %q, want cat's echo", got)
	}
	f.waitExited(id, 5*time.Second)
}
