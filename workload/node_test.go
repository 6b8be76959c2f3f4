package workload

import (
	"math"
	"os"
	"testing"
)

// TestProcessMemoryReadsThisProcess: the agent's memory is read from
// /proc as the kernel counts it: RSS is its anonymous and file pages (and
// shared memory, none here).
func TestProcessMemoryReadsThisProcess(t *testing.T) {
	mem, err := processMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	rss, anon, file := mem["VmRSS"], mem["RssAnon"], mem["RssFile"]
	if rss <= 0 || anon <= 0 || file <= 0 {
		t.Fatalf("memory %v: want every figure above 0", mem)
	}
	// Read at one instant; allow for pages faulted between the lines.
	if d := math.Abs(rss - anon - file); d > rss/10 {
		t.Errorf("RSS %.0f is not anonymous %.0f + file %.0f", rss, anon, file)
	}
	if _, err := processMemory(-1); err == nil {
		t.Error("no error for a process that cannot exist")
	}
}
