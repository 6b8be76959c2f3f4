package process

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// TestRestartedRuntimeAdoptsRunningContainers opens a second Runtime over
// the root dir of a first, as a restarted agent would, while the first
// one's container keeps running under its supervisor.
func TestRestartedRuntimeAdoptsRunningContainers(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	ctx := context.Background()
	marker := "adopt-" + strconv.Itoa(os.Getpid())
	id := f.run(containerConfig("long", "sh", "-c", `trap 'echo bye; exit 7' TERM; echo up; while :; do sleep 0.1; done # `+marker))
	done := f.run(containerConfig("short", "sh", "-c", "exit 4"))
	f.waitExited(done, 10*time.Second)
	f.waitLog("long", "up", 5*time.Second)
	before := f.status(id)

	again, err := New(Options{RootDir: f.root, NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	list, err := again.ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 {
		t.Fatalf("restarted runtime lists %d containers, want 2", len(list))
	}
	s, err := again.ContainerStatus(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != runtimeapi.ContainerState_CONTAINER_RUNNING || s.StartedAt != before.StartedAt || s.Metadata.Name != "long" {
		t.Errorf("adopted container: %v started %d name %q, want RUNNING started %d long", s.State, s.StartedAt, s.Metadata.Name, before.StartedAt)
	}
	if s, _ := again.ContainerStatus(ctx, done); s.ExitCode != 4 || s.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("adopted exited container: %v exit %d, want EXITED 4", s.State, s.ExitCode)
	}
	if err := again.StartContainer(ctx, id); err == nil {
		t.Error("the restarted runtime started a second copy of a running container")
	}
	if sbs, _ := again.ListPodSandbox(ctx, nil); len(sbs) != 1 || sbs[0].Id != f.sandbox || sbs[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("restarted runtime lists sandboxes %v, want the one ready sandbox", sbs)
	}
	// Only one copy runs.
	if n := copiesRunning(t, marker); n != 1 {
		t.Errorf("%d copies of the container run, want 1", n)
	}

	if err := again.StopContainer(ctx, id, 10); err != nil {
		t.Fatal(err)
	}
	if s, _ := again.ContainerStatus(ctx, id); s.ExitCode != 7 {
		t.Errorf("stopped by the restarted runtime: exit %d, want 7 from the trap", s.ExitCode)
	}
	f.waitLog("long", "stdout F bye", time.Second)
	if s := f.status(id); s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.ExitCode != 7 {
		t.Errorf("the first runtime sees %v exit %d, want EXITED 7", s.State, s.ExitCode)
	}
}

// TestReusedPIDIsNotTakenForTheContainer records a live stranger's PID
// with another start time as a container's process and supervisor: the
// container reads as exited, and stopping it leaves the stranger alone.
func TestReusedPIDIsNotTakenForTheContainer(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	ctx := context.Background()
	id := f.run(containerConfig("gone", "true"))
	f.waitExited(id, 10*time.Second)

	stranger := exec.Command("sleep", "100")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stranger.Process.Kill(); stranger.Wait() }()
	ident, err := supervisor.Identify(stranger.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := f.rt.container(id)
	other := supervisor.ProcIdentity{PID: ident.PID, StartTime: ident.StartTime + 1}
	if err := supervisor.WriteRecord(c.dir, supervisor.StartedFile, supervisor.StartedRecord{Process: other, Supervisor: other, StartedAt: time.Now().UnixNano(), BootID: f.rt.bootID}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(c.dir + "/" + supervisor.ExitFile); err != nil {
		t.Fatal(err)
	}

	again, err := New(Options{RootDir: f.root, NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := again.ContainerStatus(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.Reason != "Unknown" {
		t.Errorf("container whose PID was reused: %v %q, want EXITED Unknown", s.State, s.Reason)
	}
	if err := again.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if !processAlive(stranger.Process.Pid) {
		t.Error("StopContainer killed the process that reused the container's PID")
	}
}

func startedOf(t *testing.T, r *Runtime, id string) *supervisor.StartedRecord {
	t.Helper()
	c, err := r.container(id)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := r.observe(c)
	if st == nil {
		t.Fatalf("container %s has no start record", id)
	}
	return st
}

// copiesRunning counts the processes whose command line holds marker
// and whose parent's does not: each copy of a container's shell once,
// not its children forked before they exec.
func copiesRunning(t *testing.T, marker string) int {
	t.Helper()
	out, err := exec.Command("ps", "-e", "-o", "pid=,ppid=,args=").Output()
	if err != nil {
		t.Skipf("ps: %v", err)
	}
	marked := map[int]int{} // pid → ppid
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var pid, ppid int
		if _, err := fmt.Sscan(line, &pid, &ppid); err == nil && strings.Contains(line, marker) {
			marked[pid] = ppid
		}
	}
	n := 0
	for _, ppid := range marked {
		if _, child := marked[ppid]; !child {
			n++
		}
	}
	return n
}

// TestSecondSupervisorIsRefused: a restarted agent that repeats a start
// before the first supervisor has recorded it (here: its started.json is
// hidden) gets an error, and the running copy stays the only one, its
// records untouched.
func TestSecondSupervisorIsRefused(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	ctx := context.Background()
	id := f.run(containerConfig("once", "sh", "-c", `echo up; exec sleep 100`))
	f.waitLog("once", "up", 5*time.Second)
	c, _ := f.rt.container(id)
	started := c.dir + "/" + supervisor.StartedFile
	saved, err := os.ReadFile(started)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(started); err != nil {
		t.Fatal(err)
	}
	again, err := New(Options{RootDir: f.root, NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	err = again.StartContainer(ctx, id)
	if err == nil || !strings.Contains(err.Error(), "already supervised") {
		t.Errorf("second start: %v, want already supervised", err)
	}
	if supervisor.RecordExists(c.dir, supervisor.ExitFile) {
		t.Error("the refused supervisor wrote an exit record over the running container")
	}
	if err := os.WriteFile(started, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, _ := again.ContainerStatus(ctx, id); s.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container is %v after the refused start, want RUNNING", s.State)
	}
	if err := again.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
}

// TestRecordsFromAnotherBoot: after a reboot, a recorded PID and start
// time may match a new process, so records of an earlier boot are never
// taken as running, and their sandboxes are not ready.
func TestRecordsFromAnotherBoot(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	ctx := context.Background()
	id := f.run(containerConfig("before", "sleep", "100"))
	st := startedOf(t, f.rt, id)
	// Whatever happens, the process this test pretends is a stranger
	// ends, and so does its supervisor, before the fixture removes its
	// directory.
	defer func() {
		syscall.Kill(-st.Process.PID, syscall.SIGKILL)
		for deadline := time.Now().Add(5 * time.Second); st.Supervisor.Alive() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}()
	c, _ := f.rt.container(id)
	moved := *st
	moved.BootID = "an-earlier-boot"
	if err := supervisor.WriteRecord(c.dir, supervisor.StartedFile, moved); err != nil {
		t.Fatal(err)
	}
	sb := f.rt.sandboxes[f.sandbox].sandboxRecord
	sb.BootID = "an-earlier-boot"
	if err := supervisor.WriteRecord(f.rt.sandboxDir(f.sandbox), sandboxFile, sb); err != nil {
		t.Fatal(err)
	}

	again, err := New(Options{RootDir: f.root, NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := again.ContainerStatus(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.Reason != "Unknown" || !strings.Contains(s.Message, "rebooted") {
		t.Errorf("container of an earlier boot: %v %q %q, want EXITED Unknown (rebooted)", s.State, s.Reason, s.Message)
	}
	if ps, _ := again.PodSandboxStatus(ctx, f.sandbox); ps.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandbox of an earlier boot is %v, want NOTREADY", ps.State)
	}
	if err := again.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	if !processAlive(st.Process.PID) {
		t.Error("StopContainer signalled a process recorded in an earlier boot")
	}
}

// TestStopWithoutSupervisor: a container whose supervisor was killed
// still reads as running while its process lives, and StopContainer
// still stops it; with nobody to record the exit, it is Unknown.
func TestStopWithoutSupervisor(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	ctx := context.Background()
	id := f.run(containerConfig("orphan", "sleep", "100"))
	st := startedOf(t, f.rt, id)
	if err := syscall.Kill(st.Supervisor.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); st.Supervisor.Alive(); {
		if time.Now().After(deadline) {
			t.Fatal("supervisor survived SIGKILL")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := f.status(id); s.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container without supervisor is %v while its process runs, want RUNNING", s.State)
	}
	if err := f.rt.StopContainer(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	if st.Process.Alive() {
		t.Error("StopContainer left the unsupervised process running")
	}
	if s := f.status(id); s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.Reason != "Unknown" {
		t.Errorf("after stop: %v %q, want EXITED Unknown", s.State, s.Reason)
	}
}
