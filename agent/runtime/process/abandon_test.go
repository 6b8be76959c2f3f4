package process

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestBlockedStartNeverRunsASecondCopy (invariant 6): a start that
// blocks (here the supervisor opening its log, a FIFO nobody reads) and
// times out is abandoned: the container reads EXITED with StartError, and
// when the block clears its command never runs, so with the next instance
// started, exactly one copy ever ran.
func TestBlockedStartNeverRunsASecondCopy(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	runs := filepath.Join(t.TempDir(), "runs")
	script := "echo run >> " + runs + "; exec sleep 600"
	fifo := filepath.Join(f.logDir, "c", "0.log")
	if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	id, err := f.rt.CreateContainer(context.Background(), f.sandbox, containerConfig("c", "sh", "-c", script), f.sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err = f.rt.StartContainer(ctx, id)
	cancel()
	if err == nil {
		t.Fatal("a start blocked on its log returned no error")
	}
	s := f.status(id)

	// The block clears (a reader opens the FIFO); the next sync starts
	// the next instance.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.Reason != "StartError" {
		t.Errorf("the timed-out start left state %v reason %q, want EXITED StartError", s.State, s.Reason)
	}
	next := containerConfig("c", "sh", "-c", script)
	next.LogPath = "c/1.log"
	second := f.run(next)
	deadline := time.Now().Add(10 * time.Second)
	for f.status(second).State != runtimeapi.ContainerState_CONTAINER_RUNNING || !fileHas(runs, "run") {
		if time.Now().After(deadline) {
			t.Fatal("the next instance never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // what the abandoned start would need to run
	b, _ := os.ReadFile(runs)
	if n := strings.Count(string(b), "run"); n != 1 {
		t.Errorf("the container's command ran %d times, want exactly once", n)
	}
	if s := f.status(id); s.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("the abandoned instance is %v", s.State)
	}
}

func fileHas(path, s string) bool {
	b, _ := os.ReadFile(path)
	return strings.Contains(string(b), s)
}
