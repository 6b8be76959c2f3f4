package controller

import (
	"sync"
	"time"
)

// ExpectationsTTL is how long expectations hold a key back at most
// (upstream's ExpectationsTimeout): a creation or deletion the watch never
// shows (made and gone between two watches, around a 410 re-list) delays
// the key this long, never forever.
const ExpectationsTTL = 5 * time.Minute

// Expectations are upstream's UIDTrackingControllerExpectations: per key
// (an owner), the creations and deletions a controller made and has not
// yet seen in its caches. A controller does not create or delete for a
// key again until they are seen or have expired, so a slow watch never
// makes it create or delete twice. Creations are told apart by name where
// the controller names them (a Job's completion index), else only
// counted; deletions by the deleted object's key. Safe for concurrent use.
type Expectations struct {
	mu    sync.Mutex
	now   func() time.Time
	byKey map[string]*expected
}

type expected struct {
	// adds counts creations not yet seen that have no name; named are
	// those that have one.
	adds  int
	named map[string]bool
	// dels are the deletions not yet seen.
	dels map[string]bool
	// at is when they were set: they expire ExpectationsTTL later.
	at time.Time
}

// NewExpectations returns empty Expectations on the clock now (time.Now
// when nil).
func NewExpectations(now func() time.Time) *Expectations {
	if now == nil {
		now = time.Now
	}
	return &Expectations{now: now, byKey: map[string]*expected{}}
}

// Expect sets key's expectations, replacing any: adds creations that
// only count, the named ones, and the deletions of dels. Call it before
// the writes, so that their watch events, which may come before the
// writes return, find it.
func (e *Expectations) Expect(key string, adds int, named, dels []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expected{adds: adds, named: map[string]bool{}, dels: map[string]bool{}, at: e.now()}
	for _, n := range named {
		x.named[n] = true
	}
	for _, d := range dels {
		x.dels[d] = true
	}
	e.byKey[key] = x
}

// ExpectDeletions adds deletions to key's expectations, starting them
// afresh if they were satisfied or expired.
func (e *Expectations) ExpectDeletions(key string, dels ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.byKey[key]
	if x == nil || x.done() || e.expired(x) {
		x = &expected{named: map[string]bool{}, dels: map[string]bool{}, at: e.now()}
		e.byKey[key] = x
	}
	for _, d := range dels {
		x.dels[d] = true
	}
}

// Created records a creation seen (or one that failed and will never
// be): the named one if name is expected, else one that only counts.
func (e *Expectations) Created(key, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.byKey[key]
	switch {
	case x == nil:
	case x.named[name]:
		delete(x.named, name)
	case x.adds > 0:
		x.adds--
	}
}

// Deleted records a deletion seen (or one that failed).
func (e *Expectations) Deleted(key, item string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.byKey[key]; x != nil {
		delete(x.dels, item)
	}
}

// Satisfied says whether key may be acted on: nothing is expected, all of
// it was seen, or it has expired.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.byKey[key]
	return x == nil || x.done() || e.expired(x)
}

// Expiry is how long key's unsatisfied expectations still hold it back:
// 0 when they are satisfied or expired.
func (e *Expectations) Expiry(key string) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.byKey[key]
	if x == nil || x.done() || e.expired(x) {
		return 0
	}
	return x.at.Add(ExpectationsTTL).Sub(e.now())
}

// Forget drops key's expectations (its owner is gone).
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}

func (x *expected) done() bool { return x.adds <= 0 && len(x.named) == 0 && len(x.dels) == 0 }

func (e *Expectations) expired(x *expected) bool { return e.now().Sub(x.at) >= ExpectationsTTL }
