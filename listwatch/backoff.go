package listwatch

import (
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"
)

// Backoff defaults, the same as client-go's Reflector: the base delay starts
// at 800 ms and doubles up to 30 s; each wait adds up to 100 % jitter on top
// of the base, so waits fall in [0.8 s, 1.6 s) first and in [30 s, 60 s) at
// the cap. Two minutes without a failure reset the base to 800 ms.
const (
	DefaultBackoffInitial    = 800 * time.Millisecond
	DefaultBackoffMax        = 30 * time.Second
	DefaultBackoffFactor     = 2.0
	DefaultBackoffJitter     = 1.0
	DefaultBackoffResetAfter = 2 * time.Minute
)

// BackoffOptions configures a Backoff. Zero fields take the defaults above;
// a negative Jitter turns jitter off (tests use it for exact delays).
type BackoffOptions struct {
	// Initial is the first base delay.
	Initial time.Duration
	// Max caps the base delay; the jittered wait may exceed it by Jitter×Max.
	Max time.Duration
	// Factor multiplies the base delay after each failure.
	Factor float64
	// Jitter is the fraction of the base delay added at random to each wait.
	Jitter float64
	// ResetAfter is how long the caller must go without a failure for the
	// base delay to fall back to Initial.
	ResetAfter time.Duration
	// Clock is read to measure health; defaults to the real clock.
	Clock clock.PassiveClock
	// Rand returns a float in [0, 1) for jitter; defaults to math/rand/v2.
	Rand func() float64
}

// Backoff computes the waits between failed attempts: exponential, capped,
// jittered, and reset after a healthy period. It is not safe for concurrent
// use; a Reflector owns one and calls it from its single run goroutine.
type Backoff struct {
	opts BackoffOptions

	// base is the delay the next failure waits before jitter.
	base time.Duration
	// healthySince is when the last wait ended: the caller has been healthy
	// since then unless it failed again.
	healthySince time.Time
}

// NewBackoff returns a Backoff with opts' zero fields defaulted.
func NewBackoff(opts BackoffOptions) *Backoff {
	if opts.Initial <= 0 {
		opts.Initial = DefaultBackoffInitial
	}
	if opts.Max <= 0 {
		opts.Max = DefaultBackoffMax
	}
	if opts.Max < opts.Initial {
		opts.Max = opts.Initial
	}
	if opts.Factor < 1 {
		opts.Factor = DefaultBackoffFactor
	}
	switch {
	case opts.Jitter == 0:
		opts.Jitter = DefaultBackoffJitter
	case opts.Jitter < 0:
		opts.Jitter = 0
	}
	if opts.ResetAfter <= 0 {
		opts.ResetAfter = DefaultBackoffResetAfter
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Rand == nil {
		opts.Rand = rand.Float64
	}
	return &Backoff{opts: opts, base: opts.Initial}
}

// Next records a failure now and returns how long to wait before the next
// attempt. A failure that comes ResetAfter or more after the end of the
// previous wait starts again from Initial: the caller was healthy meanwhile.
func (b *Backoff) Next() time.Duration {
	now := b.opts.Clock.Now()
	if !b.healthySince.IsZero() && now.Sub(b.healthySince) >= b.opts.ResetAfter {
		b.base = b.opts.Initial
	}
	d := b.base
	b.base = min(time.Duration(float64(b.base)*b.opts.Factor), b.opts.Max)
	wait := d + time.Duration(b.opts.Rand()*b.opts.Jitter*float64(d))
	b.healthySince = now.Add(wait)
	return wait
}
