package embedded

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// One member keeps only a short raft log in memory: etcd's default keeps
// the last 5 000 entries for followers that this member does not have.
func TestWritesDoNotStayInMemoryAfterTheyAreApplied(t *testing.T) {
	const (
		writes = 2000
		size   = 8 << 10 // 2 000 x 8 KiB = 16 MiB through raft
	)
	s := mustStart(t, t.TempDir())
	defer s.Close()
	c := mustClient(t, s)
	defer c.Close()
	before := liveHeap()
	putKeys(t, c, writes, strings.Repeat("x", size))
	// Let the backend commit its batch (every 100 ms) so that its read
	// buffer lets go of the values.
	time.Sleep(300 * time.Millisecond)
	grown := int64(liveHeap()) - int64(before)
	// The raft log keeps catchUpEntries (100) plus up to 100 entries
	// before its next in-memory snapshot, ~2 MiB here, and the backend
	// its uncommitted batch; with etcd's default of 5 000 entries every
	// write stays (23 MiB).
	if limit := int64(10 << 20); grown > limit {
		t.Errorf("live heap grew by %.1f MiB after %d writes of %d KiB, want under %.0f MiB: the raft log keeps applied entries", float64(grown)/(1<<20), writes, size>>10, float64(limit)/(1<<20))
	}
	t.Logf("live heap grew by %.1f MiB", float64(grown)/(1<<20))
}
