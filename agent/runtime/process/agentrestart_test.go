package process

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testAgentEnv makes the test binary a minimal agent: it opens a
// Runtime over the given root, starts one container, prints its ID and
// waits for SIGTERM, then exits without stopping anything, as the agent
// does when it is stopped.
const testAgentEnv = "KITE_PROCESS_TEST_AGENT_ROOT"

// testAgentBlockEnv, set to a file name, makes the test agent's container
// append a line to that file when its command runs, and its start block:
// the log is a FIFO nobody reads. The agent prints the IDs before the
// start, which never returns.
const testAgentBlockEnv = "KITE_PROCESS_TEST_AGENT_BLOCK"

func testAgentMain(root string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ctx := context.Background()
	rt, err := New(Options{RootDir: root, CgroupName: testCgroupName})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	sb := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "pod", Namespace: "ns", Uid: "uid1"},
		LogDirectory: filepath.Join(root, "pods", "ns_pod_uid1"),
	}
	sandbox, err := rt.RunPodSandbox(ctx, sb, "")
	if err == nil {
		var id string
		cfg := containerConfig("ticker", "sh", "-c", `trap 'echo stopping; exit 5' TERM; i=0; while :; do i=$((i+1)); echo tick-$i; sleep 0.05; done`)
		if runs := os.Getenv(testAgentBlockEnv); runs != "" {
			cfg = containerConfig("blocked", "sh", "-c", "echo run >> "+runs+"; exec sleep 600")
			fifo := filepath.Join(sb.LogDirectory, cfg.LogPath)
			if err = os.MkdirAll(filepath.Dir(fifo), 0o755); err == nil {
				err = syscall.Mkfifo(fifo, 0o600)
			}
			if err == nil {
				if id, err = rt.CreateContainer(ctx, sandbox, cfg, sb); err == nil {
					fmt.Println(sandbox, id)
					err = rt.StartContainer(ctx, id) // blocks until killed
				}
			}
		} else if id, err = rt.CreateContainer(ctx, sandbox, cfg, sb); err == nil {
			if err = rt.StartContainer(ctx, id); err == nil {
				fmt.Println(sandbox, id)
			}
		}
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	<-term
	return 0
}

// TestAgentProcessRestart: an agent process that is stopped with SIGTERM
// leaves its container running, logging, under its supervisor; a new
// agent over the same root adopts it without starting another copy,
// stops it and sees its exit code.
func TestAgentProcessRestart(t *testing.T) {
	root := t.TempDir()
	agent := exec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(os.Environ(), testAgentEnv+"="+root)
	out, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error:") {
		agent.Process.Kill()
		agent.Wait()
		t.Fatalf("test agent: %q %v", line, err)
	}
	var sandbox, id string
	fmt.Sscan(line, &sandbox, &id)
	agent.Process.Signal(syscall.SIGTERM)
	if err := agent.Wait(); err != nil {
		t.Fatalf("test agent exit: %v", err)
	}

	rt, err := New(Options{RootDir: root, CgroupName: testCgroupName})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer rt.RemovePodSandbox(ctx, sandbox)
	s, err := rt.ContainerStatus(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after the agent exited the container is %v, want RUNNING", s.State)
	}
	// It keeps logging with no agent: the log grows.
	size := func() int64 {
		st, err := os.Stat(s.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	before := size()
	time.Sleep(300 * time.Millisecond)
	if after := size(); after <= before {
		t.Errorf("log did not grow while no agent ran (%d → %d bytes)", before, after)
	}
	if err := rt.StartContainer(ctx, id); err == nil {
		t.Error("started a second copy of an adopted container")
	}
	sup := startedOf(t, rt, id).Supervisor
	if !sup.Alive() {
		t.Fatal("the supervisor did not survive its agent")
	}
	if ppid := parentPID(t, sup.PID); ppid == os.Getpid() {
		t.Errorf("the supervisor's parent is the test process, not a reaper")
	}
	if err := rt.StopContainer(ctx, id, 10); err != nil {
		t.Fatal(err)
	}
	if s, _ := rt.ContainerStatus(ctx, id); s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.ExitCode != 5 {
		t.Errorf("stopped after adoption: %v exit %d, want EXITED 5 from the trap", s.State, s.ExitCode)
	}
	log, _ := os.ReadFile(s.LogPath)
	if !strings.Contains(string(log), "stdout F stopping") {
		t.Errorf("the trap's output is not in the log")
	}
}

func parentPID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	var ppid int
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	fmt.Sscan(fields[1], &ppid)
	return ppid
}

// TestAgentDeathAbandonsTheStartItWaitedFor (invariant 6): an agent that
// dies while a start it waits for blocks (the container's log is a FIFO
// nobody reads) leaves no start behind: the supervisor abandons it, the
// restarted agent finds the container EXITED with StartError, not
// CREATED, and when the block clears the command never runs.
func TestAgentDeathAbandonsTheStartItWaitedFor(t *testing.T) {
	root := t.TempDir()
	runs := filepath.Join(t.TempDir(), "runs")
	agent := exec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(os.Environ(), testAgentEnv+"="+root, testAgentBlockEnv+"="+runs)
	out, err := agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error:") {
		agent.Process.Kill()
		agent.Wait()
		t.Fatalf("test agent: %q %v", line, err)
	}
	var sandbox, id string
	fmt.Sscan(line, &sandbox, &id)
	time.Sleep(300 * time.Millisecond) // the supervisor blocks on the FIFO
	agent.Process.Kill()
	agent.Wait()

	rt, err := New(Options{RootDir: root, CgroupName: testCgroupName})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer rt.RemovePodSandbox(ctx, sandbox)
	deadline := time.Now().Add(10 * time.Second)
	var s *runtimeapi.ContainerStatus
	for {
		if s, err = rt.ContainerStatus(ctx, id); err != nil {
			t.Fatal(err)
		}
		if s.State == runtimeapi.ContainerState_CONTAINER_EXITED || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	fifo := filepath.Join(root, "pods", "ns_pod_uid1", "blocked", "0.log")
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.Reason != "StartError" {
		t.Errorf("after the agent died during its start the container is %v (%q), want EXITED StartError", s.State, s.Reason)
	}
	time.Sleep(time.Second) // what the blocked start would need to run
	if b, _ := os.ReadFile(runs); len(b) != 0 {
		t.Errorf("the start the dead agent waited for ran the command: %q", b)
	}
}
