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
	// One goroutine or file per container would be 10 more; allow half
	// that for the Go runtime's and the test's own goroutines settling.
	const slack = 5
	time.Sleep(50 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before+slack {
		t.Errorf("%d goroutines with 10 running containers, %d before", after, before)
	}
	sup := startedOf(t, f.rt, ids[0]).Supervisor.PID
	t.Logf("a supervisor of the test binary: %s", procMemory(t, sup))
	if fds := countFDs(t); fds > fdsBefore+slack {
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

// TestManyContainersCost runs 110 containers (the kubelet's maxPods) and
// reports what they cost this process and the supervisors. It starts 220
// processes, so it runs only with KITE_PROCESS_SCALE_TEST=1.
func TestManyContainersCost(t *testing.T) {
	if os.Getenv("KITE_PROCESS_SCALE_TEST") == "" {
		t.Skip("starts 110 containers; set KITE_PROCESS_SCALE_TEST=1 to run")
	}
	const n = 110
	// KITE_PROCESS_HELPER: measure another supervisor binary (cmd/kite);
	// KITE_PROCESS_NO_CGROUPS: without cgroups, so without init on v1.
	f := newFixture(t, Options{HelperBinary: os.Getenv("KITE_PROCESS_HELPER"), NoCgroups: os.Getenv("KITE_PROCESS_NO_CGROUPS") != ""})
	ctx := context.Background()
	rssBefore := selfRSS(t)
	start := time.Now()
	var ids []string
	for i := range n {
		ids = append(ids, f.run(containerConfig("c"+strconv.Itoa(i), "sleep", "1000")))
	}
	startTook := time.Since(start)
	start = time.Now()
	list, err := f.rt.ListContainers(ctx, nil)
	if err != nil || len(list) != n {
		t.Fatalf("listed %d, %v", len(list), err)
	}
	listTook := time.Since(start)
	var pss, anon int64
	for _, id := range ids {
		p, a := procPSS(t, startedOf(t, f.rt, id).Supervisor.PID)
		pss += p
		anon += a
	}
	t.Logf("%d containers: started in %s (%s each), listed in %s; this process's RSS %d → %d kB; supervisors: PSS %d kB total (%d each), anonymous %d kB total (%d each)",
		n, startTook.Round(time.Millisecond), (startTook / n).Round(time.Millisecond), listTook.Round(time.Microsecond),
		rssBefore, selfRSS(t), pss, pss/n, anon, anon/n)
	start = time.Now()
	if err := f.rt.StopPodSandbox(ctx, f.sandbox); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped the sandbox's %d containers in %s", n, time.Since(start).Round(time.Millisecond))
}

func selfRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

// procPSS returns pid's proportional set size and its anonymous part, in kB.
func procPSS(t *testing.T, pid int) (pss, anon int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "Pss:":
			pss = v
		case "Pss_Anon:":
			anon = v
		}
	}
	return pss, anon
}
