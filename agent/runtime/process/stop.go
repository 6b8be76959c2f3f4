package process

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// StopContainer implements runtime.Service, for a container in any
// state: a CREATED one whose start is under way is stopped once the start
// is decided (see waitSupervisorDecided). It sends SIGTERM to the
// container's process group, SIGKILL to the group and its cgroup once timeout seconds
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
	if st == nil && ex == nil {
		// CREATED: no start of this Runtime is under way, but one by an
		// agent before a restart may be, in a supervisor that outlived
		// it. That supervisor abandons the start (its report pipe is
		// closed) or has just recorded it; wait for which.
		if err := r.waitSupervisorDecided(ctx, c); err != nil {
			return err
		}
		st, ex = r.observe(c)
	}
	if st == nil {
		return nil // never started (and no exec runs without a start)
	}
	if ex == nil {
		if timeout > 0 && supervisor.SignalGroup(st.Process, syscall.SIGTERM) {
			done, err := r.waitGone(ctx, c, time.Now().Add(time.Duration(timeout)*time.Second))
			if err != nil {
				return err
			}
			if done {
				return r.stopExecs(ctx, c.ID, true)
			}
		}
		supervisor.SignalGroup(st.Process, syscall.SIGKILL)
	}
	// Also after an exit: what the container left in its cgroup when its
	// supervisor was not there to kill it.
	if c.spec.Cgroup.Populated() {
		c.spec.Cgroup.Kill()
	}
	if _, err = r.waitGone(ctx, c, time.Time{}); err != nil {
		return err
	}
	return r.stopExecs(ctx, c.ID, true)
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

// waitSupervisorDecided waits while a supervisor holds c's lock and has
// recorded neither a start nor an exit.
func (r *Runtime) waitSupervisorDecided(ctx context.Context, c *container) error {
	for supervisor.Supervised(c.dir) &&
		!supervisor.RecordExists(c.dir, supervisor.StartedFile) && !supervisor.RecordExists(c.dir, supervisor.ExitFile) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop container %s while a supervisor starts it: %w", c.ID, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
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
