package process

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// StopContainer implements runtime.Service: SIGTERM to the container's
// process group, SIGKILL to the group and its cgroup once timeout seconds
// have passed (at once for 0), and it returns when none of its processes
// is left. The group is signalled only while its leader is the process
// recorded at start (same PID and start time; see signalGroup).
func (r *Runtime) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	c, err := r.container(containerID)
	if err != nil {
		return fmt.Errorf("stop container: %w", err)
	}
	defer r.reapSupervisors()
	if err := r.waitStarted(ctx, c); err != nil {
		return err
	}
	st, ex := r.observe(c)
	if st == nil {
		return nil // never started
	}
	if ex == nil {
		if timeout > 0 && supervisor.SignalGroup(st.Process, syscall.SIGTERM) {
			done, err := r.waitGone(ctx, c, time.Now().Add(time.Duration(timeout)*time.Second))
			if done || err != nil {
				return err
			}
		}
		supervisor.SignalGroup(st.Process, syscall.SIGKILL)
	}
	// Also after an exit: what the container left in its cgroup when its
	// supervisor was not there to kill it.
	if c.spec.Cgroup.Populated() {
		c.spec.Cgroup.Kill()
	}
	_, err = r.waitGone(ctx, c, time.Time{})
	return err
}

// waitStarted waits while a StartContainer of c is under way, so that a
// stop racing a start stops what the start started.
func (r *Runtime) waitStarted(ctx context.Context, c *container) error {
	for {
		r.mu.Lock()
		starting := c.starting
		r.mu.Unlock()
		if !starting {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop container %s while it starts: %w", c.ID, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitGone polls until c has an exit record and no process left in its
// cgroup, until deadline (zero: none) or ctx ends.
func (r *Runtime) waitGone(ctx context.Context, c *container, deadline time.Time) (bool, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, ex := r.observe(c); ex != nil && !c.spec.Cgroup.Populated() {
			return true, nil
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("stop container %s: %w", c.ID, ctx.Err())
		case <-tick.C:
		}
	}
}
