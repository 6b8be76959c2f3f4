package embedded

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// entryAllocator is the raft function that allocates each entry the
// leader appends to its log (it clones the proposal, data and all). The
// WAL, the apply loop and the raft log's memory storage share that copy,
// and only the memory storage keeps it past the apply: what is still live
// from here is the raft log in memory.
const entryAllocator = "go.etcd.io/raft/v3.(*raft).appendEntry"

// profileEveryAllocation makes the heap profile record every allocation
// until the test ends, so that what it says is live is exact rather than
// a sample.
func profileEveryAllocation(t *testing.T) {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	t.Cleanup(func() { runtime.MemProfileRate = old })
}

// liveBytesAllocatedBy returns the bytes allocated (while every allocation
// is profiled) by fn or by what it calls that are still reachable. Two
// collections first: the profile describes the heap as of the last
// completed cycle, and the first may find objects that the second frees.
func liveBytesAllocatedBy(fn string) int64 {
	runtime.GC()
	runtime.GC()
	var records []runtime.MemProfileRecord
	for {
		n, ok := runtime.MemProfile(records, false)
		if ok {
			records = records[:n]
			break
		}
		records = make([]runtime.MemProfileRecord, n+n/4+16)
	}
	var live int64
	for _, r := range records {
		if r.InUseBytes() > 0 && stackHas(r.Stack(), fn) {
			live += r.InUseBytes()
		}
	}
	return live
}

func stackHas(stack []uintptr, fn string) bool {
	frames := runtime.CallersFrames(stack)
	for {
		f, more := frames.Next()
		if f.Function == fn {
			return true
		}
		if !more {
			return false
		}
	}
}

// TestWritesDoNotStayInMemoryAfterTheyAreApplied checks that one member
// keeps only a short raft log in memory: etcd's default keeps the last
// 5 000 entries for followers to catch up from, which one member does not
// have, and with it every pod write stays in the heap until 5 000 more
// follow.
//
// It measures the bytes of raft entries still live after the writes, from
// the heap profile of the function that allocates them, not the heap's
// total (which moves with the collector's timing and everything else
// etcd keeps). A correct member keeps at most catchUpEntries plus the 100
// entries etcd applies between two in-memory snapshots: ~200 of the 2 000
// entries, a tenth of what went through raft. One that keeps etcd's
// default keeps every entry: all of it. The limit, half, is 5 times what a
// correct member keeps and half what a leaking one does.
func TestWritesDoNotStayInMemoryAfterTheyAreApplied(t *testing.T) {
	const (
		writes = 2000
		size   = 8 << 10 // 2 000 x 8 KiB = 16 MiB through raft
	)
	s := mustStart(t, t.TempDir())
	defer s.Close()
	c := mustClient(t, s)
	defer c.Close()
	profileEveryAllocation(t)
	// Eight writers: the writes take their time on a loaded machine, and
	// what the test bounds is memory, not how long they take.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	value := strings.Repeat("x", size)
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < writes; i += writers {
				if _, err := c.Put(ctx, fmt.Sprintf("/k/%d", i), value); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	const written = writes * size
	kept := liveBytesAllocatedBy(entryAllocator)
	if limit := int64(written / 2); kept > limit {
		t.Errorf("the raft log keeps %.1f MiB of entries in memory after %d writes of %d KiB (%.0f MiB), want at most %.0f MiB (catch-up entries: %d)",
			float64(kept)/(1<<20), writes, size>>10, float64(written)/(1<<20), float64(limit)/(1<<20), catchUpEntries)
	}
	t.Logf("the raft log keeps %.1f MiB of entries in memory after %d writes of %d KiB", float64(kept)/(1<<20), writes, size>>10)
}
