package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/creack/pty"

	kiteruntime "github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// execWaitDelay bounds how long ExecSync waits for the output pipes after
// the command was killed (a child it forked may hold them).
const execWaitDelay = time.Second

// ExecSync implements runtime.Service: cmd runs as the container's user,
// with its environment and working directory, in its own process group and, where
// the container has a mount namespace, in that namespace. A command that
// outlives timeout is killed with its group, and the error wraps
// context.DeadlineExceeded.
//
// Entering the mount namespace is nsenter(1)'s job: setns(CLONE_NEWNS)
// works only in a single-threaded process, which a Go process never is,
// and asking the container's supervisor to fork the command would cost
// every supervisor a control socket and a goroutine listening on it for
// the container's whole life. nsenter is one short-lived process per
// exec, and only for containers with mounts.
func (r *Runtime) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (kiteruntime.ExecResult, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var stdout, stderr bytes.Buffer
	code, err := r.Exec(ctx, containerID, cmd, nil, &stdout, &stderr)
	res := kiteruntime.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: code}
	if errors.Is(err, context.DeadlineExceeded) && timeout > 0 {
		return res, fmt.Errorf("exec %q in container %s: timed out after %s: %w", cmd, containerID, timeout, err)
	}
	return res, err
}

// Exec runs cmd in the container as ExecSync does, streaming: stdin (nil
// for none) is the command's standard input, stdout and stderr receive its
// output as it comes. It returns the exit code (128+signal when killed by
// one); a command that cannot start, or that ctx ends, is an error with
// exit code -1. This is what the agent's /exec serves.
func (r *Runtime) Exec(ctx context.Context, containerID string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int32, error) {
	ctx, end := r.trackExec(ctx, containerID)
	defer end()
	x, cleanup, err := r.execCommand(ctx, containerID, cmd)
	if err != nil {
		return -1, err
	}
	defer cleanup()
	x.Stdin, x.Stdout, x.Stderr = stdin, stdout, stderr
	err = x.Start()
	if err == nil {
		r.joinV1Cgroups(containerID, x.Process.Pid)
		err = x.Wait()
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay) && x.ProcessState.Success():
		// Done before ctx ended, or at the same moment: it succeeded.
		return 0, nil
	case ctx.Err() != nil:
		return -1, fmt.Errorf("exec %q in container %s: %w", cmd, containerID, context.Cause(ctx))
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int32(ws.Signal()), nil
		}
		return int32(exitErr.ExitCode()), nil
	default:
		return -1, fmt.Errorf("exec %q in container %s: %w", cmd, containerID, err)
	}
}

// errContainerStopped ends the exec sessions of a container that stopped.
var errContainerStopped = errors.New("the container stopped")

// execSession is one exec command under way in a container.
type execSession struct {
	cancel context.CancelCauseFunc
	done   chan struct{} // closed once its command was reaped
}

// trackExec registers an exec in containerID until end is called, and
// returns the context its command runs under, which stopExecs cancels.
// An exec runs in a process group of its own, and in the container's
// cgroup only where one is writable: without one, nothing else would stop
// an exec session or an exec probe when its container stops, and it
// would outlive its pod. It is registered before the command checks that
// the container runs, so a stop racing it either cancels it or is seen by
// that check.
func (r *Runtime) trackExec(ctx context.Context, containerID string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	s := &execSession{cancel: cancel, done: make(chan struct{})}
	r.mu.Lock()
	if r.execs[containerID] == nil {
		r.execs[containerID] = map[*execSession]struct{}{}
	}
	r.execs[containerID][s] = struct{}{}
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.execs[containerID], s)
		if len(r.execs[containerID]) == 0 {
			delete(r.execs, containerID)
		}
		r.mu.Unlock()
		cancel(nil)
		close(s.done)
	}
}

// stopExecs kills the process groups of the container's exec commands
// (through their contexts) and, with wait, waits until they were reaped
// or ctx ends.
func (r *Runtime) stopExecs(ctx context.Context, containerID string, wait bool) error {
	r.mu.Lock()
	sessions := make([]*execSession, 0, len(r.execs[containerID]))
	for s := range r.execs[containerID] {
		sessions = append(sessions, s)
	}
	r.mu.Unlock()
	for _, s := range sessions {
		s.cancel(errContainerStopped)
	}
	if !wait {
		return nil
	}
	for _, s := range sessions {
		select {
		case <-s.done:
		case <-ctx.Done():
			return fmt.Errorf("stop the exec commands of container %s: %w", containerID, ctx.Err())
		}
	}
	return nil
}

// firstSizeWait bounds how long ExecTTY waits for the client's terminal
// size before it starts the command.
const firstSizeWait = 200 * time.Millisecond

func hasEnv(env []string, name string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, name+"=") {
			return true
		}
	}
	return false
}

// joinV1Cgroups puts an exec'd command into the container's v1 cgroups:
// v1 has no clone-into-cgroup, so it joins as soon as it runs (what it
// forks in that instant stays outside, which a probe does not do).
func (r *Runtime) joinV1Cgroups(containerID string, pid int) {
	c, _ := r.container(containerID)
	if c == nil {
		return
	}
	v1 := c.spec.Cgroup
	v1.Unified = ""
	if err := v1.Join(pid); err != nil {
		fmt.Fprintf(os.Stderr, "process runtime: exec in container %s: %v\n", containerID, err)
	}
}

// execCommand builds the command Exec runs; cleanup closes what it opened.
func (r *Runtime) execCommand(ctx context.Context, containerID string, cmd []string) (_ *exec.Cmd, cleanup func(), _ error) {
	cleanup = func() {}
	if len(cmd) == 0 {
		return nil, cleanup, fmt.Errorf("exec in container %s: empty command", containerID)
	}
	c, err := r.container(containerID)
	if err != nil {
		return nil, cleanup, fmt.Errorf("exec in container: %w", err)
	}
	st, ex := r.observe(c)
	if st == nil || ex != nil || !st.Process.Alive() {
		return nil, cleanup, fmt.Errorf("exec in container %s: container is not running", containerID)
	}
	wd := c.spec.WorkingDir
	if wd == "" {
		wd = "/"
	}
	proc := "/proc/" + strconv.Itoa(st.Process.PID)
	root := ""
	if len(c.spec.Mounts) > 0 {
		// Look the command up through the container's mounts.
		root = proc + "/root"
	}
	path, err := supervisor.LookPathIn(root, cmd[0], c.spec.Env)
	if err != nil {
		return nil, cleanup, fmt.Errorf("exec in container %s: %w", containerID, err)
	}
	args := append([]string{path}, cmd[1:]...)
	if len(c.spec.Mounts) > 0 {
		if r.nsenter == "" {
			return nil, cleanup, fmt.Errorf("exec in container %s: entering its mount namespace needs nsenter(1), which is not in $PATH", containerID)
		}
		// nsenter opens --wd before it enters the namespace: through
		// /proc/<pid>/root that path resolves in the container's mounts.
		ns := []string{r.nsenter, "--mount=" + proc + "/ns/mnt", "--wd=" + root + wd}
		if u := c.spec.User; u != nil {
			// nsenter must enter as root; it drops to the user after.
			// (It keeps no supplementary groups.)
			ns = append(ns, "--setgid="+strconv.FormatUint(uint64(u.GID), 10), "--setuid="+strconv.FormatUint(uint64(u.UID), 10))
		}
		args = append(append(ns, "--"), args...)
	}
	x := exec.CommandContext(ctx, args[0], args[1:]...)
	x.Env = c.spec.Env
	x.Dir = wd
	if len(c.spec.Mounts) > 0 {
		x.Dir = "/" // nsenter changes to wd inside the namespace
	}
	x.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if len(c.spec.Mounts) == 0 {
		x.SysProcAttr.Credential = c.spec.User.Credential()
	}
	if dir := c.spec.Cgroup.Unified; dir != "" {
		if f, err := os.Open(dir); err == nil {
			cleanup = func() { f.Close() }
			x.SysProcAttr.UseCgroupFD, x.SysProcAttr.CgroupFD = true, int(f.Fd())
		}
	}
	x.Cancel = func() error { return syscall.Kill(-x.Process.Pid, syscall.SIGKILL) }
	x.WaitDelay = execWaitDelay
	return x, cleanup, nil
}

// ExecTTY runs cmd as Exec does, on a new pseudo-terminal that is its
// controlling terminal (it leads a session of its own): stdin is typed
// into it, out receives what it displays, and each size from resize is
// applied to it. It returns when the command exited and its output was
// read.
func (r *Runtime) ExecTTY(ctx context.Context, containerID string, cmd []string, stdin io.Reader, out io.Writer, resize <-chan kiteruntime.TerminalSize) (int32, error) {
	ctx, end := r.trackExec(ctx, containerID)
	defer end()
	x, cleanup, err := r.execCommand(ctx, containerID, cmd)
	if err != nil {
		return -1, err
	}
	defer cleanup()
	ptmx, tty, err := pty.Open()
	if err != nil {
		return -1, fmt.Errorf("exec in container %s: open a pseudo-terminal: %w", containerID, err)
	}
	defer ptmx.Close()
	x.Stdin, x.Stdout, x.Stderr = tty, tty, tty
	// A session leader is its own process group: the cancel still kills
	// the group.
	x.SysProcAttr.Setpgid = false
	x.SysProcAttr.Setsid, x.SysProcAttr.Setctty, x.SysProcAttr.Ctty = true, true, 0
	if !hasEnv(x.Env, "TERM") {
		x.Env = append(x.Env, "TERM=xterm") // as containerd's exec with a tty
	}
	// A client sends its terminal's size first: wait a moment for it, so
	// the command starts on a terminal of the right size.
	select {
	case sz, ok := <-resize:
		if ok {
			pty.Setsize(ptmx, &pty.Winsize{Rows: sz.Height, Cols: sz.Width})
		}
	case <-time.After(firstSizeWait):
	}
	err = x.Start()
	tty.Close()
	if err != nil {
		return -1, fmt.Errorf("exec %q in container %s: %w", cmd, containerID, err)
	}
	r.joinV1Cgroups(containerID, x.Process.Pid)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // ends with resize, or when ExecTTY returns
		for {
			select {
			case <-stop:
				return
			case sz, ok := <-resize:
				if !ok {
					return
				}
				pty.Setsize(ptmx, &pty.Winsize{Rows: sz.Height, Cols: sz.Width})
			}
		}
	}()
	if stdin != nil {
		// Ends when the client closes stdin, or at its first read after
		// ptmx is closed.
		go io.Copy(ptmx, stdin)
	}
	copied := make(chan struct{})
	go func() { // ends when the terminal's last holder closes it (EIO)
		defer close(copied)
		io.Copy(out, ptmx)
	}()
	err = x.Wait()
	select {
	case <-copied:
	case <-time.After(execWaitDelay): // a child it left holds the terminal
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case ctx.Err() != nil:
		return -1, fmt.Errorf("exec %q in container %s: %w", cmd, containerID, context.Cause(ctx))
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int32(ws.Signal()), nil
		}
		return int32(exitErr.ExitCode()), nil
	default:
		return -1, fmt.Errorf("exec %q in container %s: %w", cmd, containerID, err)
	}
}
