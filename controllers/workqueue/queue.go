// Package workqueue is the keyed work queue of Kite's controllers: a key
// added while queued is queued once, a key added while a worker holds it is
// queued again when the worker is done (so one key is never worked on by
// two workers at once), failed keys come back after a per-key exponential
// delay, and a test can wait until nothing is queued or being worked on.
//
// It does what client-go's workqueue does for kube-controller-manager,
// with generics and a context instead of ShutDown polling.
package workqueue

import (
	"context"
	"sync"
	"time"
)

// Default retry delays, as client-go's DefaultTypedControllerRateLimiter's
// per-item part: 5 ms doubling up to 1000 s.
const (
	DefaultBaseDelay = 5 * time.Millisecond
	DefaultMaxDelay  = 1000 * time.Second
)

// Options configure a Queue.
type Options struct {
	// BaseDelay is the delay of a key's first retry; each further failure
	// doubles it, up to MaxDelay. Zero means the defaults.
	BaseDelay, MaxDelay time.Duration
}

// Queue is a set of keys waiting for a worker. The zero value is not
// usable; New makes one. All methods are safe for concurrent use.
type Queue[K comparable] struct {
	base, max time.Duration

	// mu guards everything below; it is never held while a caller works.
	mu sync.Mutex
	// queue is the order keys are handed out in; queued has the same keys.
	queue  []K
	queued map[K]bool
	// processing holds the keys a worker holds; a key added meanwhile is
	// in again (again) and is queued on Done.
	processing map[K]bool
	again      map[K]bool
	// failures counts each key's failures since its last Forget.
	failures map[K]int
	// waiting are the timers of delayed adds, stopped by ShutDown.
	waiting map[*time.Timer]struct{}
	// wake is closed and replaced when a key is queued or on shutdown.
	wake chan struct{}
	// idle is closed and replaced when the queue becomes idle.
	idle     chan struct{}
	shutDown bool
}

// New returns an empty Queue.
func New[K comparable](opts Options) *Queue[K] {
	if opts.BaseDelay <= 0 {
		opts.BaseDelay = DefaultBaseDelay
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	return &Queue[K]{
		base: opts.BaseDelay, max: opts.MaxDelay,
		queued: map[K]bool{}, processing: map[K]bool{}, again: map[K]bool{},
		failures: map[K]int{}, waiting: map[*time.Timer]struct{}{},
		wake: make(chan struct{}), idle: make(chan struct{}),
	}
}

// Add queues key unless it is queued already.
func (q *Queue[K]) Add(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(key)
}

func (q *Queue[K]) addLocked(key K) {
	switch {
	case q.shutDown, q.queued[key]:
	case q.processing[key]:
		q.again[key] = true
	default:
		q.queued[key] = true
		q.queue = append(q.queue, key)
		close(q.wake)
		q.wake = make(chan struct{})
	}
}

// AddAfter queues key after d.
func (q *Queue[K]) AddAfter(key K, d time.Duration) {
	if d <= 0 {
		q.Add(key)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutDown {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		delete(q.waiting, t)
		q.addLocked(key)
	})
	q.waiting[t] = struct{}{}
}

// AddRateLimited queues key after its retry delay, which doubles with each
// call until Forget.
func (q *Queue[K]) AddRateLimited(key K) {
	q.mu.Lock()
	n := q.failures[key]
	q.failures[key] = n + 1
	q.mu.Unlock()
	d := q.base
	for i := 0; i < n && d < q.max; i++ {
		d *= 2
	}
	q.AddAfter(key, min(d, q.max))
}

// Forget resets key's retry delay: call it when the key's work succeeded.
func (q *Queue[K]) Forget(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, key)
}

// Failures is how many times key was retried since its last Forget.
func (q *Queue[K]) Failures(key K) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failures[key]
}

// Get waits for a key and hands it to the caller, who must call Done with
// it. ok is false once ctx ends or the queue is shut down.
func (q *Queue[K]) Get(ctx context.Context) (key K, ok bool) {
	for {
		q.mu.Lock()
		if q.shutDown {
			q.mu.Unlock()
			return key, false
		}
		if len(q.queue) > 0 {
			key = q.queue[0]
			var zero K
			q.queue[0] = zero
			q.queue = q.queue[1:]
			delete(q.queued, key)
			q.processing[key] = true
			q.mu.Unlock()
			return key, true
		}
		wake := q.wake
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return key, false
		case <-wake:
		}
	}
}

// Work is one worker: it takes keys until ctx ends or the queue shuts
// down, syncs each, and retries a key whose sync failed after its
// rate-limited delay (failed, if not nil, hears why first), or forgets its
// failures once it succeeds.
func (q *Queue[K]) Work(ctx context.Context, sync func(context.Context, K) error, failed func(K, error)) {
	for {
		key, ok := q.Get(ctx)
		if !ok {
			return
		}
		if err := sync(ctx, key); err != nil {
			if failed != nil {
				failed(key, err)
			}
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}

// Done says the worker is finished with key; a key added meanwhile is
// queued again.
func (q *Queue[K]) Done(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if q.again[key] {
		delete(q.again, key)
		q.addLocked(key)
	}
	q.noteIdleLocked()
}

func (q *Queue[K]) noteIdleLocked() {
	if len(q.queue) == 0 && len(q.processing) == 0 {
		close(q.idle)
		q.idle = make(chan struct{})
	}
}

// Len is the number of queued keys (not those being worked on or waiting
// out a delay).
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// Idle reports whether no key is queued or being worked on. Keys waiting
// out a retry delay do not count: a key that keeps failing would otherwise
// keep the queue busy forever.
func (q *Queue[K]) Idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue) == 0 && len(q.processing) == 0
}

// WaitIdle returns nil once the queue is Idle, or ctx's error.
func (q *Queue[K]) WaitIdle(ctx context.Context) error {
	for {
		q.mu.Lock()
		if len(q.queue) == 0 && len(q.processing) == 0 {
			q.mu.Unlock()
			return nil
		}
		idle := q.idle
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle:
		}
	}
}

// ShutDown drops every queued and delayed key; Get returns false from then
// on. It is safe to call more than once.
func (q *Queue[K]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutDown {
		return
	}
	q.shutDown = true
	for t := range q.waiting {
		t.Stop()
	}
	clear(q.waiting)
	q.queue, q.queued = nil, map[K]bool{}
	close(q.wake)
	q.noteIdleLocked()
}
