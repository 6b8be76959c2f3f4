package listwatch

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestBackoffDoublesToCapWithoutJitter(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	b := NewBackoff(BackoffOptions{Jitter: -1, Clock: clk})
	want := []time.Duration{
		800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond,
		6400 * time.Millisecond, 12800 * time.Millisecond, 25600 * time.Millisecond,
		30 * time.Second, 30 * time.Second,
	}
	for i, w := range want {
		got := b.Next()
		if got != w {
			t.Fatalf("wait %d: got %v, want %v", i, got, w)
		}
		// Fail again right after the wait: no healthy period.
		clk.SetTime(clk.Now().Add(got))
	}
}

func TestBackoffJitterStaysWithinBaseAndTwiceBase(t *testing.T) {
	tests := []struct {
		name string
		rand float64
		want []time.Duration
	}{
		{"rand 0 gives the base", 0, []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond}},
		{"rand 0.5 adds half", 0.5, []time.Duration{1200 * time.Millisecond, 2400 * time.Millisecond}},
		{"rand near 1 stays under twice", 0.999, []time.Duration{1599200 * time.Microsecond, 3198400 * time.Microsecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
			b := NewBackoff(BackoffOptions{Clock: clk, Rand: func() float64 { return tt.rand }})
			for i, w := range tt.want {
				if got := b.Next(); got != w {
					t.Fatalf("wait %d: got %v, want %v", i, got, w)
				}
			}
		})
	}
}

func TestBackoffAtCapWaitsBetween30And60Seconds(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	r := 0.0
	b := NewBackoff(BackoffOptions{Clock: clk, Rand: func() float64 { r += 0.13; return r - float64(int(r)) }})
	var last time.Duration
	for range 20 {
		last = b.Next()
		clk.SetTime(clk.Now().Add(last))
	}
	if last < 30*time.Second || last >= 60*time.Second {
		t.Fatalf("wait at cap = %v, want in [30s, 60s)", last)
	}
}

func TestBackoffResetsAfterTwoMinutesOfHealth(t *testing.T) {
	tests := []struct {
		name    string
		healthy time.Duration
		want    time.Duration
	}{
		{"failing again at once keeps doubling", 0, 6400 * time.Millisecond},
		{"just under two minutes keeps doubling", 2*time.Minute - time.Millisecond, 6400 * time.Millisecond},
		{"two minutes healthy starts over", 2 * time.Minute, 800 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
			b := NewBackoff(BackoffOptions{Jitter: -1, Clock: clk})
			for range 3 { // 0.8, 1.6, 3.2
				clk.SetTime(clk.Now().Add(b.Next()))
			}
			clk.SetTime(clk.Now().Add(tt.healthy))
			if got := b.Next(); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}
