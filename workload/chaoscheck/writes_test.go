package chaoscheck

import "testing"

func TestCheckWritesCountsOnlyAcknowledgedWritesAsLost(t *testing.T) {
	acked := func(name string, seq, rv int64) Write { return Write{Name: name, Seq: seq, RV: rv, Acked: true} }
	unknown := func(name string, seq int64) Write { return Write{Name: name, Seq: seq} }
	deleted := func(name string, seq int64) Write { return Write{Name: name, Seq: seq, Acked: true, Delete: true} }
	unknownDelete := func(name string, seq int64) Write { return Write{Name: name, Seq: seq, Delete: true} }
	cases := []struct {
		name                string
		writes              []Write
		final               map[string]Object
		lost, invented, unk int
	}{
		{"every acked write is final", []Write{acked("a", 1, 10), acked("a", 2, 12), acked("b", 3, 11)},
			map[string]Object{"a": {2, 12, 12, 2}, "b": {3, 11, 11, 3}}, 0, 0, 0},
		{"an object missing from the list", []Write{acked("a", 1, 10)}, map[string]Object{}, 1, 0, 0},
		{"the list holds an older seq", []Write{acked("a", 1, 10), acked("a", 2, 12)},
			map[string]Object{"a": {1, 10, 10, 1}}, 1, 0, 0},
		{"etcd is behind the list", []Write{acked("a", 1, 10)}, map[string]Object{"a": {1, 10, 9, 1}}, 1, 0, 0},
		{"etcd lacks the key", []Write{acked("a", 1, 10)}, map[string]Object{"a": {1, 10, 0, 0}}, 1, 0, 0},
		{"an unknown write that landed after the last acked one", []Write{acked("a", 1, 10), unknown("a", 2)},
			map[string]Object{"a": {2, 14, 14, 2}}, 0, 0, 1},
		{"an unknown write that did not land", []Write{acked("a", 1, 10), unknown("a", 2)},
			map[string]Object{"a": {1, 10, 10, 1}}, 0, 0, 1},
		{"an unknown create that did not land", []Write{unknown("a", 1)}, map[string]Object{}, 0, 0, 1},
		{"etcd holds another seq than the list", []Write{acked("a", 1, 10), acked("a", 2, 12)},
			map[string]Object{"a": {2, 12, 12, 1}}, 1, 0, 0},
		{"an acknowledged delete leaves the object gone", []Write{acked("a", 1, 10), deleted("a", 2)}, map[string]Object{}, 0, 0, 0},
		{"an acknowledged delete undone", []Write{acked("a", 1, 10), deleted("a", 2)},
			map[string]Object{"a": {1, 10, 10, 1}}, 1, 0, 0},
		{"a create after an acknowledged delete", []Write{acked("a", 1, 10), deleted("a", 2), acked("a", 3, 14)},
			map[string]Object{"a": {3, 14, 14, 3}}, 0, 0, 0},
		{"an unknown create after an acknowledged delete that landed", []Write{acked("a", 1, 10), deleted("a", 2), unknown("a", 3)},
			map[string]Object{"a": {3, 14, 14, 3}}, 0, 0, 1},
		{"an unknown delete that landed", []Write{acked("a", 1, 10), unknownDelete("a", 2)}, map[string]Object{}, 0, 0, 1},
		{"an unknown delete older than the last acknowledged write", []Write{unknownDelete("a", 1), acked("a", 2, 12)}, map[string]Object{}, 1, 0, 1},
		{"a delete's seq is not an object's", []Write{acked("a", 1, 10), unknownDelete("a", 2)},
			map[string]Object{"a": {2, 12, 12, 2}}, 0, 1, 1},
		{"a seq no write carried", []Write{acked("a", 1, 10)}, map[string]Object{"a": {7, 10, 10, 7}}, 0, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := CheckWrites(tc.writes, tc.final)
			if r.Lost != tc.lost || r.Invented != tc.invented || r.Unknown != tc.unk {
				t.Errorf("lost %d invented %d unknown %d, want %d %d %d (%v)", r.Lost, r.Invented, r.Unknown, tc.lost, tc.invented, tc.unk, r.Problems)
			}
		})
	}
}
