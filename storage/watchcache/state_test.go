package watchcache

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// contents is what a snapshot holds: key -> rv.
func contents(t tree) map[string]uint64 {
	m := map[string]uint64{}
	t.Ascend("", func(e *element) bool { m[e.key] = e.rv; return true })
	return m
}

// TestSnapshotAtRebuildsEveryVersionOfTheWindow applies random changes to
// the state and checks that the snapshot rebuilt for every resourceVersion
// still in the window is exactly what the state held then, that older ones
// are Expired and future ones not yet reached.
func TestSnapshotAtRebuildsEveryVersionOfTheWindow(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	s := newState([]string{"node"}, newHistory(time.Minute, minEvents, 300))
	initial := []*element{{key: "/pods/a", rv: 5, fields: indexedBy("n1")}, {key: "/pods/b", rv: 7, fields: indexedBy("n2")}}
	s.replace(initial, 10)
	past := map[uint64]map[string]uint64{10: contents(s.tree)}
	now := time.Unix(0, 0)
	for rv := uint64(11); rv < 1000; rv++ {
		key := fmt.Sprintf("/pods/%c", 'a'+rnd.IntN(20))
		prev := s.tree.Get(key)
		ev := &event{key: key, rv: rv, prev: prev, received: now}
		switch {
		case prev != nil && rnd.IntN(4) == 0:
			ev.typ = watch.Deleted
		default:
			ev.typ = watch.Modified
			if prev == nil {
				ev.typ = watch.Added
			}
			ev.cur = &element{key: key, rv: rv, fields: indexedBy(fmt.Sprintf("n%d", rnd.IntN(3)))}
		}
		s.apply(ev)
		past[rv] = contents(s.tree)
	}
	for rv, want := range past {
		got, err := s.snapshotAt(rv)
		switch {
		case rv < s.hist.complete:
			if !apierrors.IsResourceExpired(err) {
				t.Fatalf("snapshotAt(%d) before the window (%d): err %v, want Expired", rv, s.hist.complete, err)
			}
		case err != nil:
			t.Fatalf("snapshotAt(%d): %v", rv, err)
		case !maps.Equal(contents(got), want):
			t.Fatalf("snapshotAt(%d) differs from the state at %d", rv, rv)
		}
	}
	if _, err := s.snapshotAt(s.rv + 1); err != errNotYet {
		t.Fatalf("snapshotAt(future) = %v, want errNotYet", err)
	}
	// The index agrees with the latest snapshot.
	for _, v := range []string{"n0", "n1", "n2"} {
		byIdx, _ := s.byIndex("node", v, "/pods/", "")
		n := 0
		s.tree.Ascend("", func(e *element) bool {
			if e.index(0) == v {
				if byIdx[n].key != e.key {
					t.Fatalf("index %s: %q at %d, want %q", v, byIdx[n].key, n, e.key)
				}
				n++
			}
			return true
		})
		if n != len(byIdx) {
			t.Fatalf("index %s holds %d keys, the snapshot %d", v, len(byIdx), n)
		}
	}
}
