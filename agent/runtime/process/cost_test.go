package process

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRunningContainersCostTheAgentNoGoroutine: containers run under
// their own supervisor processes, so the agent holds no goroutine (and no
// pipe) per running container. It also logs what a supervisor costs.
func TestRunningContainersCostTheAgentNoGoroutine(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	ctx := context.Background()
	before, fdsBefore := runtime.NumGoroutine(), countFDs(t)
	var ids []string
	for i := range 10 {
		ids = append(ids, f.run(containerConfig("c"+strconv.Itoa(i), "sh", "-c", "echo hi; sleep 100")))
	}
	if _, err := f.rt.ListContainers(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// Allow for runtime-internal goroutines settling, but not one per container.
	time.Sleep(50 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before+1 {
		t.Errorf("%d goroutines with 10 running containers, %d before", after, before)
	}
	sup := startedOf(t, f.rt, ids[0]).Supervisor.PID
	t.Logf("a supervisor of the test binary: %s", procMemory(t, sup))
	if fds := countFDs(t); fds > fdsBefore {
		t.Errorf("%d open files with 10 running containers, %d before", fds, fdsBefore)
	}
	for _, id := range ids {
		if err := f.rt.StopContainer(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
	}
}

// procMemory reads VmRSS, RssAnon, RssFile and Threads of pid.
func procMemory(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, k := range []string{"VmRSS:", "RssAnon:", "RssFile:", "Threads:"} {
			if strings.HasPrefix(line, k) {
				out = append(out, strings.Join(strings.Fields(line), " "))
			}
		}
	}
	return strings.Join(out, ", ")
}

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
