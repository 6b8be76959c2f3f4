// Package periodic runs a controller's pass every period and on demand,
// and lets a test wait until a whole pass has run since it asked: the
// shape of controllers that look at everything each time (node lifecycle,
// pod GC) rather than work through a queue of keys.
package periodic

import (
	"context"
	"sync"
	"time"
)

// Loop runs passes. The zero value is not usable; New makes one.
type Loop struct {
	kick chan struct{}

	// mu guards the fields below.
	mu      sync.Mutex
	done    int  // passes finished
	running bool // a pass is under way
	// passed is closed and replaced at the end of each pass.
	passed chan struct{}
}

// New returns a Loop.
func New() *Loop {
	return &Loop{kick: make(chan struct{}, 1), passed: make(chan struct{})}
}

// Run calls pass at once, then every period and after each Kick, until ctx
// ends. Run it once.
func (l *Loop) Run(ctx context.Context, period time.Duration, pass func(context.Context)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		l.mu.Lock()
		l.running = true
		l.mu.Unlock()
		pass(ctx)
		l.mu.Lock()
		l.running = false
		l.done++
		close(l.passed)
		l.passed = make(chan struct{})
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-l.kick:
		}
	}
}

// Kick asks for a pass soon (one pending kick is kept).
func (l *Loop) Kick() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// WaitIdle kicks a pass and returns once a pass that began after the call
// has ended: whatever the caller changed before has been looked at.
func (l *Loop) WaitIdle(ctx context.Context) error {
	l.mu.Lock()
	target := l.done + 1
	if l.running {
		target++ // the running pass may have read before the change
	}
	l.mu.Unlock()
	l.Kick()
	for {
		l.mu.Lock()
		reached, passed := l.done >= target, l.passed
		l.mu.Unlock()
		if reached {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-passed:
			l.Kick() // the pass that ended may have taken the kick early
		}
	}
}
