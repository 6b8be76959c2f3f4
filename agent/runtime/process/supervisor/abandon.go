package supervisor

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// errAbandoned: the agent stopped waiting for the start.
var errAbandoned = errors.New("the agent stopped waiting for the container to start (its start timed out or was cancelled)")

const (
	guardStarting = iota
	guardCommitted
	guardFailed // the start failed and was reported so
	guardAbandoned
)

// startGuard decides, once, whether a container's start counts: either
// the supervisor records it (started.json) or the agent abandons it, never
// both. The agent abandons a start by closing its end of the report pipe
// (a StartContainer that timed out or was cancelled, or an agent that
// died while it waited): a start the agent does not know of must not go on
// to run a copy of the container beside the one the agent starts next.
type startGuard struct {
	mu    sync.Mutex
	pid   int // the container's first process, once forked
	state int
}

// fork runs start, which forks the container's first process and returns
// its PID, unless the start was abandoned; an abandonment meanwhile waits
// for it, and kills what it forked.
func (g *startGuard) fork(start func() (int, error)) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == guardAbandoned {
		return 0, errAbandoned
	}
	pid, err := start()
	if err == nil {
		g.pid = pid
	}
	return pid, err
}

// commit runs record (writing started.json) unless the start was
// abandoned; once it succeeded, the start can no longer be abandoned.
func (g *startGuard) commit(record func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == guardAbandoned {
		return errAbandoned
	}
	if err := record(); err != nil {
		return err
	}
	g.state = guardCommitted
	return nil
}

// failed marks a start that failed on its own: it is reported as such,
// not abandoned.
func (g *startGuard) failed() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == guardStarting {
		g.state = guardFailed
	}
}

// abandon ends a start that was neither recorded nor failed: it SIGKILLs
// the forked process's group (not reaped yet, so still ours) and runs
// cleanup. It reports false when the start was decided already.
func (g *startGuard) abandon(cleanup func(pid int)) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != guardStarting {
		return false
	}
	g.state = guardAbandoned
	if g.pid > 0 {
		syscall.Kill(-g.pid, syscall.SIGKILL)
	}
	cleanup(g.pid)
	return true
}

// watchAbandon waits, in a goroutine of the supervisor, for the agent to
// close its end of the report pipe before the start is recorded; then it
// abandons the start, records it as a StartError and ends the supervisor.
// Once the start is recorded it returns (the agent closes its end after
// reading the report).
func watchAbandon(g *startGuard, dir string, spec ContainerSpec) {
	go func() {
		for {
			readerGone := waitPeerClosed(reportFD)
			g.mu.Lock()
			decided := g.state != guardStarting
			g.mu.Unlock()
			if decided {
				return
			}
			if !readerGone {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if g.abandon(func(int) { spec.Cgroup.Kill() }) {
				WriteRecord(dir, ExitFile, ExitRecord{
					ExitCode: exitCodeStartError, FinishedAt: time.Now().UnixNano(),
					Reason: reasonStartError, Message: errAbandoned.Error(),
				})
				// What the container was given (pipes, the terminal) goes
				// with this process; init, if it was blocked, dies with
				// the SIGKILL it has pending and never execs the command.
				os.Exit(1)
			}
			return
		}
	}()
}

// waitPeerClosed blocks until fd, the write end of a pipe, has no reader
// any more (poll reports POLLERR or POLLHUP whatever events are asked; it
// asks for none). It returns false when interrupted.
func waitPeerClosed(fd int) bool {
	type pollFd struct {
		fd      int32
		events  int16
		revents int16
	}
	p := pollFd{fd: int32(fd)}
	_, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1, 0, 0, 0, 0)
	if errno != 0 {
		return false
	}
	const pollErr, pollHup, pollNval = 0x8, 0x10, 0x20
	return p.revents&(pollErr|pollHup|pollNval) != 0
}
