package flowcontrol

import (
	"context"
	"sync"
	"time"
)

// dispatcher holds every level's seats and queues. One mutex guards it
// all: a request takes it once to get a seat and once to give it back.
type dispatcher struct {
	mu     sync.Mutex
	levels map[string]*level
	// poolUsed are the seats levels use beyond their guaranteed ones, out
	// of poolSize, the seats they may lend (borrowing as upstream, decided
	// at each dispatch rather than every few seconds).
	poolUsed, poolSize int
	// waiting counts the queued requests of all levels.
	waiting int
	now     func() time.Time
}

// level is one priority level's state. Its cfg changes with the
// configuration; a level whose object is gone is removed and only drains.
type level struct {
	cfg     *levelConfig
	inUse   int
	waiting int
	queues  []*queue
	// vt is the level's virtual time: the start tag of the request last
	// dispatched (start-time fair queuing).
	vt      float64
	removed bool
	retry   *retryAfter
	// executing are the level's requests holding seats (or, exempt,
	// running), and the counts the debug dumps show (debug.go).
	executing                                 trackedList
	dispatched, rejected, timedout, cancelled int
}

type queue struct {
	waiters []*waiter
	// start is the virtual start tag of the queue's next request;
	// executing counts its requests holding seats.
	start     float64
	executing int
}

type waiter struct {
	ch    chan struct{}
	hash  uint64
	q     *queue
	state waiterState
	// width is the seats the request takes (its work estimate).
	width int
	// req describes the request to the debug dumps; nil when untracked.
	req *tracked
}

type waiterState int

const (
	waiting waiterState = iota
	granted
	rejected
)

func newDispatcher(now func() time.Time) *dispatcher {
	return &dispatcher{levels: map[string]*level{}, now: now}
}

// seat is a request's held seats (width of them); release gives them
// back, latency after it is called (the estimate's additional latency:
// the watch notifications of a write). The zero seat (exempt requests)
// holds nothing.
type seat struct {
	d       *dispatcher
	l       *level
	q       *queue
	width   int
	latency time.Duration
	// req is the tracked request, tl its level (also set for exempt
	// requests, which hold no seat).
	req *tracked
	tl  *level
}

func (s seat) release() {
	if s.req != nil {
		s.d.mu.Lock()
		s.tl.executing.remove(s.req)
		s.d.mu.Unlock()
	}
	if s.l == nil {
		return
	}
	if s.latency > 0 {
		time.AfterFunc(s.latency, s.releaseNow)
		return
	}
	s.releaseNow()
}

func (s seat) releaseNow() {
	d := s.d
	d.mu.Lock()
	d.takeLocked(s.l, -s.width)
	if s.q != nil {
		s.q.executing -= s.width
	}
	if d.waiting > 0 {
		d.dispatchLocked()
	}
	d.mu.Unlock()
}

// takeLocked changes l's seats in use by delta, keeping the pool's count.
func (d *dispatcher) takeLocked(l *level, delta int) {
	if l.removed {
		l.inUse += delta
		return
	}
	g := l.cfg.guaranteed()
	before := max(0, l.inUse-g)
	l.inUse += delta
	d.poolUsed += max(0, l.inUse-g) - before
}

// canDispatchLocked reports whether l may start a request of width
// seats: within its guaranteed seats a level always may; past them it
// borrows from the pool, up to its limit. A request wider than the
// level's limit runs only alone, so that it is not starved (upstream's
// canAccommodateSeatsLocked).
func (d *dispatcher) canDispatchLocked(l *level, width int) bool {
	g := l.cfg.guaranteed()
	switch {
	case width > l.cfg.limit():
		return l.inUse == 0
	case l.inUse+width <= g:
		return true
	case l.inUse+width > l.cfg.limit():
		return false
	}
	borrowed := max(0, l.inUse+width-g) - max(0, l.inUse-g)
	return d.poolUsed+borrowed <= d.poolSize
}

// outcome of acquire.
type outcome int

const (
	executed outcome = iota
	rejectedFull
	rejectedTimeout
)

// acquire gets a seat of lc's level for a request of flow hash: at once
// when one is free and nobody of the level waits, else after waiting in
// the queue shuffle sharding picks (the shortest of the flow's hand) until
// fair queuing dispatches it or the context of waitContext ends (made only
// when the request waits: a timer per request costs as much as the rest). A level that rejects, or
// whose chosen queue is full, refuses at once.
func (d *dispatcher) acquire(ctx context.Context, waitContext func(context.Context) (context.Context, context.CancelFunc), lc *levelConfig, hash uint64) (seat, outcome) {
	return d.acquireWork(ctx, waitContext, lc, hash, workEstimate{seats: 1}, nil)
}

// gauge is what counts the requests waiting in queues (a Prometheus
// gauge).
type gauge interface {
	Inc()
	Dec()
}

// acquireWork is acquire for a request whose work is we: it takes
// we.seats seats, given back we.additionalLatency after release. inQueue,
// when not nil, counts the request while it waits in a queue.
func (d *dispatcher) acquireWork(ctx context.Context, waitContext func(context.Context) (context.Context, context.CancelFunc), lc *levelConfig, hash uint64, we workEstimate, inQueue gauge) (seat, outcome) {
	return d.acquireTracked(ctx, waitContext, lc, hash, we, inQueue, nil)
}

// acquireTracked is acquireWork for a request the debug dumps show: req,
// when not nil, is listed while it waits and while it holds its seat
// (until release), and its level's counts move (debug.go).
func (d *dispatcher) acquireTracked(ctx context.Context, waitContext func(context.Context) (context.Context, context.CancelFunc), lc *levelConfig, hash uint64, we workEstimate, inQueue gauge, req *tracked) (seat, outcome) {
	width := max(1, we.seats)
	if lc.exempt {
		if req == nil {
			return seat{}, executed
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		l := d.levels[lc.pl.Name]
		if l == nil {
			return seat{}, executed
		}
		return seat{d: d, req: req, tl: l}, d.startLocked(l, req, nil)
	}
	d.mu.Lock()
	l := d.levels[lc.pl.Name]
	if l == nil || l.removed {
		// Configured away since classification: as upstream, it still
		// gets served by the level it was classified into; here that
		// is none, so no limit applies.
		d.mu.Unlock()
		return seat{}, executed
	}
	if l.waiting == 0 && d.canDispatchLocked(l, width) {
		d.takeLocked(l, width)
		d.startLocked(l, req, nil)
		d.mu.Unlock()
		return seat{d: d, l: l, width: width, latency: we.additionalLatency, req: req, tl: l}, executed
	}
	if l.cfg.reject || len(l.queues) == 0 {
		d.rejectLocked(l)
		d.mu.Unlock()
		return seat{}, rejectedFull
	}
	var buf [maxHand]int
	q := chooseQueue(l.queues, deal(hash, len(l.queues), l.cfg.handSize, buf[:]))
	if len(q.waiters) >= l.cfg.queueLengthLimit {
		d.rejectLocked(l)
		d.mu.Unlock()
		return seat{}, rejectedFull
	}
	w := &waiter{ch: make(chan struct{}), hash: hash, width: width, req: req}
	d.enqueueLocked(l, q, w)
	// Seats may be free while a wider request waits for more: fair
	// queuing decides whether this one goes first (upstream dispatches
	// as much as possible after each arrival).
	d.dispatchLocked()
	d.mu.Unlock()
	if inQueue != nil {
		inQueue.Inc()
		defer inQueue.Dec()
	}

	waitCtx, cancel := waitContext(ctx)
	defer cancel()
	select {
	case <-w.ch:
	case <-waitCtx.Done():
	case <-ctx.Done():
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch w.state {
	case granted:
		return seat{d: d, l: l, q: w.q, width: width, latency: we.additionalLatency, req: req, tl: l}, executed
	}
	timedOut := w.state == waiting
	if timedOut {
		// Timed out (or the client left): out of the queue.
		d.dequeueLocked(l, w)
	}
	d.rejectLocked(l)
	if timedOut {
		// Counted as upstream's queue set counts them: not as rejected.
		l.rejected--
		if ctx.Err() != nil {
			l.cancelled++
		} else {
			l.timedout++
		}
	}
	return seat{}, rejectedTimeout
}

// startLocked counts a request of l dispatched and, when tracked, lists
// it as executing from now, from queue q (nil: none).
func (d *dispatcher) startLocked(l *level, req *tracked, q *queue) outcome {
	l.dispatched++
	if req != nil {
		req.start = d.now()
		req.queue = -1
		for i, c := range l.queues {
			if c == q {
				req.queue = i
			}
		}
		l.executing.add(req)
	}
	return executed
}

// chooseQueue is the queue of the hand with the fewest requests, waiting
// and executing (the first of them on ties).
func chooseQueue(queues []*queue, hand []int) *queue {
	var best *queue
	for _, i := range hand {
		q := queues[i]
		if best == nil || len(q.waiters)+q.executing < len(best.waiters)+best.executing {
			best = q
		}
	}
	return best
}

func (d *dispatcher) enqueueLocked(l *level, q *queue, w *waiter) {
	if len(q.waiters) == 0 {
		// A queue that was idle starts at the level's virtual time: it
		// gets no credit for the time it was empty.
		q.start = max(q.start, l.vt)
	}
	w.q = q
	q.waiters = append(q.waiters, w)
	l.waiting++
	d.waiting++
}

func (d *dispatcher) dequeueLocked(l *level, w *waiter) {
	q := w.q
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			break
		}
	}
	l.waiting--
	d.waiting--
}

func (d *dispatcher) rejectLocked(l *level) {
	l.rejected++
	l.retry.drop(d.now().Unix())
}

// dispatchLocked gives free seats to waiting requests: first to levels
// below their nominal seats, then to those that may borrow; within a
// level, to the queue of the smallest virtual start (fair queuing).
func (d *dispatcher) dispatchLocked() {
	for _, belowNominal := range []bool{true, false} {
		for progress := true; progress && d.waiting > 0; {
			progress = false
			for _, l := range d.levels {
				if l.waiting == 0 || (belowNominal && l.inUse >= l.cfg.nominal) {
					continue
				}
				// The queue fair queuing picks goes next, or nobody
				// of the level: a wide request is not overtaken by
				// narrower ones behind it (upstream's queue set).
				q := nextQueue(l)
				if !d.canDispatchLocked(l, q.waiters[0].width) {
					continue
				}
				d.dispatchOneLocked(l, q)
				progress = true
			}
		}
	}
}

// nextQueue is the queue of l with waiters and the smallest virtual
// start; l has waiters.
func nextQueue(l *level) *queue {
	var q *queue
	for _, c := range l.queues {
		if len(c.waiters) > 0 && (q == nil || c.start < q.start) {
			q = c
		}
	}
	return q
}

func (d *dispatcher) dispatchOneLocked(l *level, q *queue) {
	w := q.waiters[0]
	q.waiters = q.waiters[1:]
	l.vt = q.start
	// A request counts its seats for one unit of virtual time each.
	q.start += float64(w.width)
	q.executing += w.width
	l.waiting--
	d.waiting--
	d.takeLocked(l, w.width)
	d.startLocked(l, w.req, q)
	w.state = granted
	close(w.ch)
}

// configure makes the levels those of c: new levels start empty, kept
// ones take their new seats (their queues rebuilt, the waiting requests
// queued again by their flows, when the queuing changed), gone ones are
// removed (their waiting requests rejected, their executing ones drain).
// Then free seats go to waiting requests.
func (d *dispatcher) configure(c *config) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, l := range d.levels {
		if c.levels[name] != nil {
			continue
		}
		for _, q := range l.queues {
			for _, w := range q.waiters {
				w.state = rejected
				close(w.ch)
			}
		}
		d.waiting -= l.waiting
		l.waiting, l.queues, l.removed = 0, nil, true
		delete(d.levels, name)
	}
	d.poolSize, d.poolUsed = 0, 0
	for name, lc := range c.levels {
		l := d.levels[name]
		switch {
		case l == nil:
			l = &level{cfg: lc, retry: newRetryAfter()}
			l.queues = newQueues(lc.queues)
			d.levels[name] = l
		case !l.cfg.sameQueues(lc):
			var ws []*waiter
			for _, q := range l.queues {
				ws = append(ws, q.waiters...)
			}
			d.waiting -= l.waiting
			l.waiting = 0
			l.cfg = lc
			l.queues = newQueues(lc.queues)
			for _, w := range ws {
				if lc.reject || len(l.queues) == 0 {
					w.state = rejected
					close(w.ch)
					continue
				}
				var buf [maxHand]int
				d.enqueueLocked(l, chooseQueue(l.queues, deal(w.hash, len(l.queues), lc.handSize, buf[:])), w)
			}
		default:
			l.cfg = lc
		}
		if !lc.exempt {
			d.poolSize += lc.lendable
			d.poolUsed += max(0, l.inUse-lc.guaranteed())
		}
	}
	if d.waiting > 0 {
		d.dispatchLocked()
	}
}

func newQueues(n int) []*queue {
	qs := make([]*queue, n)
	for i := range qs {
		qs[i] = &queue{}
	}
	return qs
}

// retryAfterSeconds is Retry-After for a rejection by lc's level.
func (d *dispatcher) retryAfterSeconds(lc *levelConfig) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l := d.levels[lc.pl.Name]; l != nil {
		return l.retry.seconds
	}
	return 1
}
