package watchcache

import (
	"testing"
	"time"
)

func TestHistoryKeepsTheWindowWithinItsBound(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name     string
		maxCap   int
		events   int
		interval time.Duration // between events
		wantCap  int
		wantLen  int
	}{
		// Events faster than the window: the ring doubles up to its bound,
		// then evicts.
		{name: "grows to the bound", maxCap: 400, events: 1000, interval: time.Millisecond, wantCap: 400, wantLen: 400},
		// Within the bound nothing is lost.
		{name: "keeps everything under the bound", maxCap: 1000, events: 500, interval: time.Millisecond, wantCap: 800, wantLen: 500},
		// Events slower than the window: the ring stays small.
		{name: "stays small when events are old", maxCap: 1000, events: 1000, interval: time.Second, wantCap: 100, wantLen: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory(75*time.Second, minEvents, tt.maxCap)
			h.reset(10)
			for i := range tt.events {
				h.add(&event{rv: uint64(11 + i), received: t0.Add(time.Duration(i) * tt.interval)}, t0.Add(time.Duration(i)*tt.interval))
			}
			if h.capacity() != tt.wantCap || h.len() != tt.wantLen {
				t.Fatalf("capacity %d len %d, want %d and %d", h.capacity(), h.len(), tt.wantCap, tt.wantLen)
			}
			newest := uint64(10 + tt.events)
			oldest := h.at(h.start).rv
			if h.complete != oldest-1 {
				t.Fatalf("complete = %d, want %d (just before the oldest event)", h.complete, oldest-1)
			}
			// Replaying from complete yields every event after it, in order.
			events, ok := h.since(h.complete)
			if !ok || len(events) != tt.wantLen || events[len(events)-1].rv != newest {
				t.Fatalf("since(%d) = %d events (ok %v)", h.complete, len(events), ok)
			}
			for i := 1; i < len(events); i++ {
				if events[i].rv != events[i-1].rv+1 {
					t.Fatalf("replay out of order at %d", i)
				}
			}
			if _, ok := h.since(h.complete - 1); ok && h.complete > 10 {
				t.Fatal("since() before the window must say so")
			}
			if events, ok := h.since(newest - 5); !ok || len(events) != 5 {
				t.Fatalf("since(newest-5) = %d events, want 5", len(events))
			}
		})
	}
}
