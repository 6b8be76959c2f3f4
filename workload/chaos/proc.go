package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// readyTimeout bounds how long a kite process may take to print
// "kite: ready"; generous, for a loaded machine.
const readyTimeout = 60 * time.Second

// proc is one kite process that can be killed and started again with the
// same arguments. Its stdout and stderr go to a log file.
type proc struct {
	name   string
	binary string
	args   []string
	log    *os.File

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	starts int
}

func newProc(name, binary, logPath string, args ...string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	return &proc{name: name, binary: binary, args: args, log: f}, nil
}

// start runs the process and waits until it is ready.
func (p *proc) start(ctx context.Context) error {
	cmd := exec.Command(p.binary, p.args...)
	cmd.Stderr = p.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	ready := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.starts++
	p.mu.Unlock()
	go func() {
		copyLines(out, p.log, ready)
		cmd.Wait()
		close(exited)
	}()
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-ready:
		return nil
	case <-exited:
		return fmt.Errorf("%s exited before it was ready (see %s)", p.name, p.log.Name())
	case <-t.C:
		p.kill()
		return fmt.Errorf("%s not ready within %s (see %s)", p.name, readyTimeout, p.log.Name())
	case <-ctx.Done():
		p.kill()
		return ctx.Err()
	}
}

// copyLines copies r to w line by line and closes ready at "kite: ready".
func copyLines(r io.Reader, w io.Writer, ready chan struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	isReady := false
	for sc.Scan() {
		fmt.Fprintln(w, sc.Text())
		if !isReady && strings.TrimSpace(sc.Text()) == "kite: ready" {
			isReady = true
			close(ready)
		}
	}
	io.Copy(io.Discard, r)
}

// kill sends SIGKILL and waits for the process to go.
func (p *proc) kill() { p.signal(syscall.SIGKILL, 0) }

// stop sends SIGTERM, and SIGKILL if the process is not gone within 15 s.
func (p *proc) stop() { p.signal(syscall.SIGTERM, 15*time.Second) }

func (p *proc) signal(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	if grace > 0 {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-exited:
			return
		case <-t.C:
			cmd.Process.Kill()
		}
	}
	<-exited
}

// pid is the running process's ID.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// close stops the process and closes its log.
func (p *proc) close() {
	p.stop()
	p.log.Close()
}
