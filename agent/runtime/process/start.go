package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// startTimeout bounds how long StartContainer waits for a supervisor to
// say that the command runs, when the caller's context has no deadline.
const startTimeout = 30 * time.Second

// StartContainer implements runtime.Service: it starts the container's
// supervisor and returns once the command runs, or with why it could not
// (the container is then exited with reason StartError, as containerd
// records it). A start that does not report before ctx's deadline (30 s
// without one) or ctx's end is abandoned (see abandonStart): it never
// runs later.
func (r *Runtime) StartContainer(ctx context.Context, containerID string) error {
	r.mu.Lock()
	c := r.containers[containerID]
	switch {
	case c == nil:
		r.mu.Unlock()
		return fmt.Errorf("start container: %w", notFound("container", containerID))
	case c.starting || c.started != nil || c.exit != nil:
		r.mu.Unlock()
		return fmt.Errorf("start container %s: already started", containerID)
	}
	c.starting = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		c.starting = false
		r.mu.Unlock()
	}()
	if supervisor.RecordExists(c.dir, supervisor.StartedFile) || supervisor.RecordExists(c.dir, supervisor.ExitFile) {
		return fmt.Errorf("start container %s: already started", containerID)
	}
	if err := r.startSupervisor(ctx, c); err != nil {
		return fmt.Errorf("start container %s (%s): %w", c.config.Metadata.Name, containerID, err)
	}
	r.observe(c)
	return nil
}

func (r *Runtime) startSupervisor(ctx context.Context, c *container) error {
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devNull.Close()
	logFile, err := os.OpenFile(filepath.Join(c.dir, supervisor.LogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return err
	}
	// Closed before abandonStart waits: a closed report pipe is what
	// tells the supervisor to abandon the start.
	closeReport := sync.OnceFunc(func() { reportR.Close() })
	defer closeReport()
	proc, err := os.StartProcess(r.helper, []string{"kite-supervisor", c.dir}, &os.ProcAttr{
		Dir: "/",
		// The role runs from package supervisor's init, before the
		// binary's other initialisers, so there is no start-up garbage
		// to keep a collector from (GOGC=off, until 2026-12-02).
		Env:   []string{supervisor.RoleEnv + "=" + supervisor.RoleSupervisor, "GOMAXPROCS=1"},
		Files: []*os.File{devNull, logFile, logFile, reportW},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	reportW.Close()
	if err != nil {
		return fmt.Errorf("start supervisor: %w", err)
	}
	r.mu.Lock()
	r.supervisors[proc.Pid] = struct{}{}
	r.mu.Unlock()
	// Reaped by reapSupervisors with wait4, not by a goroutine per
	// container waiting on it; proc is kept until the start is decided,
	// to kill a supervisor that never reports (through its pidfd, which
	// cannot reach another process once it is reaped).
	defer proc.Release()

	waited := time.Now()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = waited.Add(startTimeout)
	}
	reportR.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { reportR.SetReadDeadline(time.Now()) })
	line, err := bufio.NewReader(reportR).ReadString('\n')
	stop()
	line = strings.TrimSpace(line)
	switch {
	case line == "ok":
		return nil
	case strings.HasPrefix(line, "error: "):
		return errors.New(strings.TrimPrefix(line, "error: "))
	case errors.Is(err, os.ErrDeadlineExceeded):
		closeReport()
		return r.abandonStart(c, proc, fmt.Errorf("the supervisor did not report within %s (see %s)", time.Since(waited).Round(time.Millisecond), filepath.Join(c.dir, supervisor.LogFile)))
	default:
		tail, _ := os.ReadFile(filepath.Join(c.dir, supervisor.LogFile))
		return fmt.Errorf("the supervisor ended without a report (%v): %s", err, lastLine(tail))
	}
}

// abandonWait bounds how long a start the agent gave up on may take to be
// decided by its supervisor before the supervisor is killed.
const abandonWait = 5 * time.Second

// abandonStart ends a start that did not report in time (invariant 6: the
// container must not run later as a copy the agent does not know of). It
// closes the report pipe, which tells the supervisor to abandon the start:
// it kills what it forked and records a StartError. A supervisor that does
// not decide within abandonWait (blocked itself) is killed, and the
// StartError recorded here. A start recorded in the meantime stands: nil.
func (r *Runtime) abandonStart(c *container, proc *os.Process, why error) error {
	deadline := time.Now().Add(abandonWait)
	for {
		if supervisor.RecordExists(c.dir, supervisor.StartedFile) {
			return nil // it ran after all: the caller stops it if it must
		}
		if supervisor.RecordExists(c.dir, supervisor.ExitFile) {
			return why
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	proc.Kill()
	err := supervisor.WriteRecord(c.dir, supervisor.ExitFile, supervisor.ExitRecord{
		ExitCode: 128, FinishedAt: time.Now().UnixNano(), Reason: "StartError",
		Message: why.Error() + "; the supervisor was killed",
	})
	return errors.Join(why, err)
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
