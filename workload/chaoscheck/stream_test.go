package chaoscheck

import "testing"

// step is one thing a watcher saw: a list (typ "LIST") or an event.
type step struct {
	typ   string
	name  string
	rv    int64
	items map[string]int64
}

func list(rv int64, items map[string]int64) step { return step{typ: "LIST", rv: rv, items: items} }
func ev(typ, name string, rv int64) step         { return step{typ: typ, name: name, rv: rv} }

func TestStreamCheck(t *testing.T) {
	acked := func(name string, rv int64) Write { return Write{Name: name, RV: rv, Acked: true} }
	cases := []struct {
		name                     string
		steps                    []step
		acked                    []Write
		final                    map[string]int64
		lost, dups, reord, relst int
		diverged                 bool
	}{
		{"exactly once in order",
			[]step{list(5, map[string]int64{"a": 4}), ev("MODIFIED", "a", 6), ev("ADDED", "b", 7)},
			[]Write{acked("a", 4), acked("a", 6), acked("b", 7)},
			map[string]int64{"a": 6, "b": 7}, 0, 0, 0, 0, false},
		{"an acked write never delivered",
			[]step{list(5, nil), ev("ADDED", "a", 6)},
			[]Write{acked("a", 6), acked("b", 7)},
			map[string]int64{"a": 6, "b": 7}, 1, 0, 0, 0, true},
		{"an event delivered twice",
			[]step{list(5, nil), ev("ADDED", "a", 6), ev("MODIFIED", "a", 8), ev("ADDED", "a", 6)},
			[]Write{acked("a", 6), acked("a", 8)},
			map[string]int64{"a": 8}, 0, 1, 0, 0, false},
		{"an event already in the first list",
			[]step{list(5, map[string]int64{"a": 4}), ev("ADDED", "a", 4)},
			[]Write{acked("a", 4)},
			map[string]int64{"a": 4}, 0, 1, 0, 0, false},
		{"events out of order",
			[]step{list(5, nil), ev("ADDED", "b", 8), ev("ADDED", "a", 6)},
			[]Write{acked("a", 6), acked("b", 8)},
			map[string]int64{"a": 6, "b": 8}, 1, 0, 1, 0, true},
		{"a 410 then a re-list that covers the gap",
			[]step{list(5, nil), ev("ADDED", "a", 6), list(20, map[string]int64{"a": 9, "b": 15}), ev("MODIFIED", "b", 21)},
			[]Write{acked("a", 6), acked("a", 9), acked("b", 15), acked("b", 21)},
			map[string]int64{"a": 9, "b": 21}, 0, 0, 0, 1, false},
		{"a re-list whose state is not the final one",
			[]step{list(5, nil), list(20, map[string]int64{"a": 9})},
			[]Write{acked("a", 9), acked("a", 22)},
			map[string]int64{"a": 22}, 1, 0, 0, 1, true},
		{"a re-list older than the events",
			[]step{list(5, nil), ev("ADDED", "a", 10), list(8, map[string]int64{"a": 7})},
			[]Write{acked("a", 7), acked("a", 10)},
			map[string]int64{"a": 10}, 1, 0, 1, 1, true},
		{"a deletion removes the object from the state",
			[]step{list(5, map[string]int64{"a": 4}), ev("DELETED", "a", 6)},
			[]Write{acked("a", 4)},
			map[string]int64{}, 0, 0, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s Stream
			for _, st := range tc.steps {
				if st.typ == "LIST" {
					s.List(st.rv, st.items)
				} else {
					s.Event(st.typ, st.name, st.rv)
				}
			}
			r := s.Check(tc.acked, tc.final)
			if r.Lost != tc.lost || r.Duplicated != tc.dups || r.Reordered != tc.reord || r.Relists != tc.relst || r.Diverged != tc.diverged {
				t.Errorf("lost %d dup %d reordered %d relists %d diverged %v, want %d %d %d %d %v\n%v",
					r.Lost, r.Duplicated, r.Reordered, r.Relists, r.Diverged, tc.lost, tc.dups, tc.reord, tc.relst, tc.diverged, r.Problems)
			}
		})
	}
}
