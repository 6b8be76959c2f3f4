package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	clientremotecommand "k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// replaysFirstAttach says whether the first attach session to a running
// instance of container c starts by replaying what the instance has
// written so far: only for a container with stdin and stdinOnce, and
// only a session that can be joined as it was asked (a container with a
// terminal has no stderr: the runtime refuses a session asking for one,
// and kubectl then prints the log).
//
// Those are what `kubectl run -i/-it` creates, and kubectl attaches only
// once it sees the pod Running and Ready, so whatever the command wrote
// before is lost to the attach: a one-shot command (`kubectl run client
// --image=busybox --rm -it -- wget -qO- web`, whose pod kubectl's default
// --restart=Always never ends) has mostly written and often exited and
// been started again before kubectl gets there, and prints nothing. The
// first session of such a container is the one its creator meant to
// see it from the start (stdinOnce gives that session alone the
// container's stdin; `docker run -it` attaches before the start), so it
// gets the instance's output from its log first. Against a kubelet the
// line prints nothing or times out; here it prints the answer, and a
// shell's first session shows its prompt. Later sessions see only what
// is written while they last, as upstream.
func replaysFirstAttach(c *v1.Container, opts remotecommand.Options) bool {
	return c != nil && c.Stdin && c.StdinOnce && !(opts.TTY && opts.Stderr)
}

// attachedSet remembers the container instances that have had an
// attach session, so that only the first replays. Its mutex guards ids
// for the few instructions of a lookup; nothing is held across I/O.
type attachedSet struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// first records an attach to instance id and says whether it is the
// first. When the set grows past limit, ids the runtime no longer lists
// (removed instances) are dropped first; live is called outside the lock.
func (a *attachedSet) first(id string, limit int, live func() map[string]bool) bool {
	a.mu.Lock()
	_, seen := a.ids[id]
	n := len(a.ids)
	a.mu.Unlock()
	if seen {
		return false
	}
	var keep map[string]bool
	if n >= limit && live != nil {
		keep = live()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, seen := a.ids[id]; seen { // a concurrent attach was first
		return false
	}
	if a.ids == nil {
		a.ids = map[string]struct{}{}
	}
	if keep != nil {
		for k := range a.ids {
			if !keep[k] {
				delete(a.ids, k)
			}
		}
	}
	a.ids[id] = struct{}{}
	return true
}

// replayAttacher is the first session of a stdin-once container run by
// a CRI runtime: the instance's log so far, then the runtime's own
// attach session (its streaming server's URL), which the agent joins as
// a client instead of handing the connection through.
type replayAttacher struct {
	s    *Server
	inst instance
	url  string
}

func (a replayAttacher) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	// What each stream has been given from the log, so that a later read
	// gives only what was written since.
	stdout, stderr := &skipWriter{w: out}, &skipWriter{w: errw}
	if tty {
		// The log holds a terminal's lines without their carriage
		// returns; the client's terminal, in raw mode, needs them back.
		stdout.w = crlfWriter{w: out}
	}
	replay := func() (int64, error) {
		stdout.skip, stderr.skip = stdout.n, stderr.n
		stdout.n, stderr.n = 0, 0
		opts := LogOptions{Tail: -1}
		if out != nil {
			opts.Stdout = stdout
		}
		if errw != nil {
			opts.Stderr = stderr
		}
		if err := ReadLogs(ctx, a.inst.logPath, opts, func() bool { return false }, io.Discard); err != nil {
			return 0, fmt.Errorf("replaying the log of container %s: %w", a.inst.id, err)
		}
		return stdout.n - stdout.skip + stderr.n - stderr.skip, nil
	}
	// catchUp gives what the instance wrote between the replay and the
	// live session (the runtime gives a session only what is written
	// after it joins), once the instance has ended: its log is then
	// complete, though the runtime may take a moment to flush it.
	catchUp := func() error {
		for range catchUpTries {
			n, err := replay()
			if err != nil || n > 0 {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(catchUpEvery):
			}
		}
		return nil
	}
	if _, err := replay(); err != nil {
		return err
	}
	u, err := url.Parse(a.url)
	if err != nil {
		return fmt.Errorf("the runtime's streaming URL %q: %w", a.url, err)
	}
	exec, err := clientremotecommand.NewSPDYExecutor(&rest.Config{Host: u.Scheme + "://" + u.Host}, http.MethodPost, u)
	if err != nil {
		return fmt.Errorf("attaching to container %s at %s: %w", a.inst.id, a.url, err)
	}
	live := &countWriter{}
	opts := clientremotecommand.StreamOptions{Stdin: in, Tty: tty}
	// The session's own streams are closed by ServeAttach, not by the
	// executor.
	if out != nil {
		opts.Stdout = countingWriter{w: out, c: live}
	}
	if errw != nil && !tty {
		opts.Stderr = countingWriter{w: errw, c: live}
	}
	if resize != nil {
		opts.TerminalSizeQueue = sizeQueue{ctx: ctx, c: resize}
	}
	err = exec.StreamWithContext(ctx, opts)
	if ctx.Err() != nil {
		return err
	}
	// The runtime refuses the live session of an instance that ended
	// after the replay, or ends one that carried nothing when it ends;
	// its status may say so only a moment later.
	if !a.ended(ctx, err != nil || live.n.Load() == 0) {
		if err != nil {
			return fmt.Errorf("attaching to container %s: %w", a.inst.id, err)
		}
		return nil // the client left; the instance runs on
	}
	if err != nil || live.n.Load() == 0 {
		return catchUp()
	}
	return nil
}

// ended says whether the instance is no longer running, waiting up to
// endWait for the runtime's status to catch up with an exit when wait.
func (a replayAttacher) ended(ctx context.Context, wait bool) bool {
	deadline := time.Now().Add(endWait)
	for {
		st, err := a.s.opts.Runtime.ContainerStatus(ctx, a.inst.id)
		if err != nil || st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			return true
		}
		if !wait || time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(catchUpEvery):
		}
	}
}

// How long a replaying session waits for an ended instance's status and
// log to catch up.
const (
	endWait      = time.Second
	catchUpEvery = 50 * time.Millisecond
	catchUpTries = 10
)

// countWriter counts what a session's live streams carried.
type countWriter struct{ n atomic.Int64 }

// countingWriter writes to w (never closing it) and counts into c.
type countingWriter struct {
	w io.Writer
	c *countWriter
}

func (cw countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.c.n.Add(int64(n))
	return n, err
}

// skipWriter drops the first skip bytes written to it and counts what it
// passes on (n, from the start, skipped bytes included).
type skipWriter struct {
	w       io.Writer
	skip, n int64
}

func (s *skipWriter) Write(p []byte) (int, error) {
	total := len(p)
	s.n += int64(total)
	if s.skip > 0 {
		d := min(s.skip, int64(len(p)))
		s.skip -= d
		p = p[d:]
	}
	if len(p) > 0 {
		if _, err := s.w.Write(p); err != nil {
			return 0, err
		}
	}
	return total, nil
}

// crlfWriter writes each "\n" as "\r\n".
type crlfWriter struct{ w io.Writer }

func (c crlfWriter) Write(p []byte) (int, error) {
	if _, err := c.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// sizeQueue hands the session's terminal sizes to the runtime's session;
// nil ends it (resize closed or ctx done).
type sizeQueue struct {
	ctx context.Context
	c   <-chan remotecommand.TerminalSize
}

func (q sizeQueue) Next() *clientremotecommand.TerminalSize {
	select {
	case <-q.ctx.Done():
		return nil
	case sz, ok := <-q.c:
		if !ok {
			return nil
		}
		return &clientremotecommand.TerminalSize{Width: sz.Width, Height: sz.Height}
	}
}
