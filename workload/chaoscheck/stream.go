package chaoscheck

import (
	"fmt"
	"maps"
	"sort"
)

// Stream records what one watcher saw, as it comes: call List for its
// first list and for every re-list after a 410, Event for every event.
// It keeps the delivered resourceVersions in a sorted slice (they come in
// order when nothing is wrong), so a long run costs 8 bytes per event.
type Stream struct {
	started   bool
	firstRV   int64
	lastRV    int64
	delivered []int64    // sorted
	gaps      [][2]int64 // (from, to]: covered by a re-list, not by events
	state     map[string]int64
	events    int
	relists   int
	dups      int
	reordered int
	problems  []string
}

// List records a list at rv with items (name → resourceVersion).
func (s *Stream) List(rv int64, items map[string]int64) {
	if !s.started {
		s.started, s.firstRV = true, rv
	} else {
		s.relists++
		if rv < s.lastRV {
			s.reordered++
			s.problemf("re-list at rv %d is older than the last event's %d", rv, s.lastRV)
		} else {
			s.gaps = append(s.gaps, [2]int64{s.lastRV, rv})
		}
	}
	s.lastRV = max(s.lastRV, rv)
	s.state = maps.Clone(items)
	if s.state == nil {
		s.state = map[string]int64{}
	}
}

// Event records an ADDED, MODIFIED or DELETED event of name at rv.
func (s *Stream) Event(typ, name string, rv int64) {
	s.events++
	if rv <= s.lastRV {
		i := sort.Search(len(s.delivered), func(i int) bool { return s.delivered[i] >= rv })
		if i < len(s.delivered) && s.delivered[i] == rv {
			s.dups++
			s.problemf("%s %s rv %d delivered again (last rv %d)", typ, name, rv, s.lastRV)
		} else if s.inList(rv) {
			// The object's state at rv came in the list already.
			s.dups++
			s.problemf("%s %s rv %d delivered after a list at rv >= it", typ, name, rv)
		} else {
			s.reordered++
			s.problemf("%s %s rv %d after rv %d", typ, name, rv, s.lastRV)
		}
		return
	}
	s.delivered = append(s.delivered, rv)
	s.lastRV = rv
	if s.state == nil {
		s.state = map[string]int64{}
	}
	if typ == "DELETED" {
		delete(s.state, name)
	} else {
		s.state[name] = rv
	}
}

// inList reports whether rv is at or before the first list or inside a
// re-list's gap.
func (s *Stream) inList(rv int64) bool {
	if rv <= s.firstRV {
		return true
	}
	for _, g := range s.gaps {
		if rv > g[0] && rv <= g[1] {
			return true
		}
	}
	return false
}

// LastRV is the newest resourceVersion the stream has reached.
func (s *Stream) LastRV() int64 { return s.lastRV }

func (s *Stream) problemf(format string, args ...any) {
	if len(s.problems) < maxProblems {
		s.problems = append(s.problems, fmt.Sprintf(format, args...))
	}
}

// StreamReport is the verdict on one stream.
type StreamReport struct {
	Events, Relists             int
	Lost, Duplicated, Reordered int
	// Diverged is true when the state the stream built is not the fresh
	// list's.
	Diverged bool
	Problems []string
}

// Check judges the stream against the acknowledged writes its selector
// matches and the fresh list (name → resourceVersion) its selector
// matches, taken once the stream reached it.
func (s *Stream) Check(acked []Write, final map[string]int64) StreamReport {
	r := StreamReport{Events: s.events, Relists: s.relists, Duplicated: s.dups, Reordered: s.reordered}
	r.Problems = append(r.Problems, s.problems...)
	for _, w := range acked {
		if !w.Acked || s.inList(w.RV) {
			continue
		}
		i := sort.Search(len(s.delivered), func(i int) bool { return s.delivered[i] >= w.RV })
		if i == len(s.delivered) || s.delivered[i] != w.RV {
			r.Lost++
			if len(r.Problems) < maxProblems {
				r.Problems = append(r.Problems, fmt.Sprintf("acknowledged write %s seq %d rv %d never delivered", w.Name, w.Seq, w.RV))
			}
		}
	}
	if !maps.Equal(s.state, final) {
		r.Diverged = true
		for name, rv := range final {
			if got, ok := s.state[name]; !ok || got != rv {
				if len(r.Problems) < maxProblems {
					r.Problems = append(r.Problems, fmt.Sprintf("%s: list has rv %d, the stream %d (present %v)", name, rv, got, ok))
				}
			}
		}
		for name, rv := range s.state {
			if _, ok := final[name]; !ok && len(r.Problems) < maxProblems {
				r.Problems = append(r.Problems, fmt.Sprintf("%s: the stream has rv %d, the list has none", name, rv))
			}
		}
	}
	return r
}
