package watchcache

import (
	"time"
)

// history is the event window: a ring buffer of the most recent events in
// resourceVersion order. It keeps at least window's worth of events,
// growing from minCap by doubling, and never more than maxCap (the
// --watch-cache-sizes bound); when the oldest events are older than the
// window it shrinks again, so a quiet resource holds little.
//
// history is not safe for concurrent use; the cache's lock guards it.
type history struct {
	buf        []*event
	start, end int // absolute positions; buf[i%len(buf)] for i in [start, end)
	// complete is the resourceVersion after which the window holds every
	// event: a watch from an RV >= complete can be replayed, an older one
	// is Expired.
	complete uint64

	window         time.Duration
	minCap, maxCap int
}

func newHistory(window time.Duration, minCap, maxCap int) history {
	return history{buf: make([]*event, minCap), window: window, minCap: minCap, maxCap: maxCap}
}

func (h *history) len() int { return h.end - h.start }

func (h *history) at(i int) *event { return h.buf[i%len(h.buf)] }

// reset empties the window after a (re-)list at rv.
func (h *history) reset(rv uint64) {
	for i := h.start; i < h.end; i++ {
		h.buf[i%len(h.buf)] = nil
	}
	h.start, h.end = 0, 0
	h.complete = rv
}

// add appends an event, growing, shrinking or evicting as the window
// requires. now is the time the event was received.
func (h *history) add(ev *event, now time.Time) {
	if h.len() == len(h.buf) {
		oldest := h.at(h.start)
		switch {
		case len(h.buf) < h.maxCap && now.Sub(oldest.received) < h.window:
			h.resize(min(2*len(h.buf), h.maxCap))
		case len(h.buf) > h.minCap && now.Sub(h.at(h.end-len(h.buf)/4).received) > h.window:
			h.resize(max(len(h.buf)/2, h.minCap))
		}
	}
	if h.len() == len(h.buf) {
		h.complete = h.at(h.start).rv
		h.buf[h.start%len(h.buf)] = nil
		h.start++
	}
	h.buf[h.end%len(h.buf)] = ev
	h.end++
}

// resize moves the newest events into a buffer of size n (dropping the
// oldest if they do not fit).
func (h *history) resize(n int) {
	buf := make([]*event, n)
	from := max(h.start, h.end-n)
	if from > h.start {
		h.complete = h.at(from - 1).rv
	}
	for i := from; i < h.end; i++ {
		buf[i-from] = h.at(i)
	}
	h.end -= from
	h.start = 0
	h.buf = buf
}

// since returns the events with rv > rv, oldest first, or ok=false when
// the window no longer holds all of them.
func (h *history) since(rv uint64) (events []*event, ok bool) {
	if rv < h.complete {
		return nil, false
	}
	// Binary search for the first event newer than rv.
	lo, hi := h.start, h.end
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if h.at(mid).rv <= rv {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	events = make([]*event, 0, h.end-lo)
	for i := lo; i < h.end; i++ {
		events = append(events, h.at(i))
	}
	return events, true
}

// capacity is the current size of the ring.
func (h *history) capacity() int { return len(h.buf) }
