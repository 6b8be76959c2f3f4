package prober

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// maxOutput bounds what a check keeps of a command's output or a
// response body, as upstream's 10 KiB.
const maxOutput = 10 << 10

// checkExec runs cmd in the container: exit 0 is success, any other exit
// a failure whose output is the command's (stdout then stderr, as the
// kubelet joins them), and running past the timeout a failure saying so.
func checkExec(ctx context.Context, e Execer, containerID string, cmd []string, timeout time.Duration) (Outcome, string, error) {
	// The runtime bounds the command by timeout; the context is a backstop
	// for a runtime that does not return in time.
	ctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	res, err := e.ExecSync(ctx, containerID, cmd, timeout)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return OutcomeFailure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
		}
		return OutcomeFailure, "", fmt.Errorf("exec probe %q in container %s: %w", cmd, containerID, err)
	}
	out := append(res.Stdout[:len(res.Stdout):len(res.Stdout)], res.Stderr...)
	if len(out) > maxOutput {
		out = out[:maxOutput]
	}
	if res.ExitCode != 0 {
		return OutcomeFailure, string(out), nil
	}
	return OutcomeSuccess, string(out), nil
}
