package prober

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/kite-project/kite/agent/runtime"
)

// hostExecer runs commands as processes on this host: a real exec, the
// way the process runtime runs them, without its container setup. The
// container ID only has to be the one asked for.
type hostExecer struct{ containerID string }

func (h hostExecer) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (runtime.ExecResult, error) {
	if containerID != h.containerID {
		return runtime.ExecResult{}, fmt.Errorf("container %q: %w", containerID, runtime.ErrNotFound)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	if ctx.Err() != nil {
		return runtime.ExecResult{}, fmt.Errorf("exec %q: %w", cmd, ctx.Err())
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return runtime.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: int32(exit.ExitCode())}, nil
	}
	if err != nil {
		return runtime.ExecResult{}, fmt.Errorf("exec %q: %w", cmd, err)
	}
	return runtime.ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, nil
}
