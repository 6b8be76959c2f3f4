package process

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kiteruntime "github.com/kite-project/kite/agent/runtime"
)

func TestContainerRunsAndRecordsExitCode(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		wantCode   int32
		wantReason string
	}{
		{"exit 0 is Completed", "exit 0", 0, "Completed"},
		{"exit 3 is Error", "exit 3", 3, "Error"},
		{"killed by a signal is 128+signal", "kill -9 $$", 137, "Error"},
	}
	f := newFixture(t, Options{NoCgroups: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := containerConfig("c"+strconv.Itoa(int(tt.wantCode)), "sh", "-c", tt.script)
			before := time.Now()
			id := f.run(cfg)
			s := f.waitExited(id, 10*time.Second)
			if s.ExitCode != tt.wantCode || s.Reason != tt.wantReason {
				t.Errorf("exit code %d reason %q, want %d %q", s.ExitCode, s.Reason, tt.wantCode, tt.wantReason)
			}
			if s.StartedAt < before.UnixNano() || s.FinishedAt < s.StartedAt || s.CreatedAt > s.StartedAt {
				t.Errorf("times: created %d started %d finished %d (test began %d)", s.CreatedAt, s.StartedAt, s.FinishedAt, before.UnixNano())
			}
			if s.Image.GetImage() != "busybox:1.36" || s.ImageRef != "busybox:1.36" {
				t.Errorf("image %v ref %q, want the configured busybox:1.36 recorded", s.Image, s.ImageRef)
			}
		})
	}
}

func TestContainerGetsEnvAndWorkingDir(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	wd := t.TempDir()
	cfg := containerConfig("env", "sh", "-c", `echo "greeting=$GREETING pwd=$(pwd)"`)
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "GREETING", Value: []byte("hello world")}}
	cfg.WorkingDir = wd
	id := f.run(cfg)
	f.waitExited(id, 10*time.Second)
	f.waitLog("env", "greeting=hello world pwd="+wd, time.Second)
}

func TestCreateContainerRefusesBadConfig(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	tests := []struct {
		name string
		cfg  *runtimeapi.ContainerConfig
		want string
	}{
		{"no command", containerConfig("nocmd"), "has no command"},
		{"no name", &runtimeapi.ContainerConfig{Command: []string{"true"}, LogPath: "x/0.log"}, "no metadata name"},
		{"no log path", func() *runtimeapi.ContainerConfig { c := containerConfig("nolog", "true"); c.LogPath = ""; return c }(), "no log path"},
		{"missing mount source", func() *runtimeapi.ContainerConfig {
			c := containerConfig("mnt", "true")
			c.Mounts = []*runtimeapi.Mount{{HostPath: "/no/such/dir", ContainerPath: "/data"}}
			return c
		}(), "/no/such/dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := f.rt.CreateContainer(context.Background(), f.sandbox, tt.cfg, f.sbCfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("CreateContainer = %q, %v; want an error with %q", id, err, tt.want)
			}
			if noCmd := len(tt.cfg.Command) == 0; errors.Is(err, ErrNoCommand) != noCmd {
				t.Errorf("errors.Is(err, ErrNoCommand) = %v for a config with command %q", !noCmd, tt.cfg.Command)
			}
			list, _ := f.rt.ListContainers(context.Background(), nil)
			if len(list) != 0 {
				t.Errorf("a refused create left %d containers", len(list))
			}
		})
	}
	if _, err := f.rt.CreateContainer(context.Background(), "nosuchsandbox", containerConfig("x", "true"), f.sbCfg); !errors.Is(err, kiteruntime.ErrNotFound) {
		t.Errorf("create in an unknown sandbox: %v, want ErrNotFound", err)
	}
}

func TestStartErrorIsReportedAndRecorded(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	id, err := f.rt.CreateContainer(context.Background(), f.sandbox, containerConfig("bad", "/no/such/binary"), f.sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	err = f.rt.StartContainer(context.Background(), id)
	if err == nil || !strings.Contains(err.Error(), "/no/such/binary") {
		t.Fatalf("StartContainer = %v, want an error naming the command", err)
	}
	s := f.status(id)
	if s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.Reason != "StartError" || s.ExitCode != 128 {
		t.Errorf("after a failed start: %v %q %d, want EXITED StartError 128", s.State, s.Reason, s.ExitCode)
	}
	if err := f.rt.StartContainer(context.Background(), id); err == nil {
		t.Error("a second StartContainer succeeded")
	}
}

func TestListAndFilterContainers(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	ctx := context.Background()
	running := f.run(containerConfig("sleeper", "sleep", "100"))
	exited := f.run(containerConfig("done", "true"))
	created, err := f.rt.CreateContainer(ctx, f.sandbox, containerConfig("idle", "true"), f.sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	f.waitExited(exited, 10*time.Second)
	state := func(s runtimeapi.ContainerState) *runtimeapi.ContainerFilter {
		return &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: s}}
	}
	tests := []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"all", nil, []string{running, exited, created}},
		{"running", state(runtimeapi.ContainerState_CONTAINER_RUNNING), []string{running}},
		{"exited", state(runtimeapi.ContainerState_CONTAINER_EXITED), []string{exited}},
		{"created", state(runtimeapi.ContainerState_CONTAINER_CREATED), []string{created}},
		{"by id", &runtimeapi.ContainerFilter{Id: exited}, []string{exited}},
		{"by label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{kiteruntime.LabelContainerName: "sleeper"}}, []string{running}},
		{"by other sandbox", &runtimeapi.ContainerFilter{PodSandboxId: "other"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := f.rt.ListContainers(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, c := range list {
				got[c.Id] = true
			}
			if len(got) != len(tt.want) {
				t.Fatalf("listed %d containers, want %d", len(got), len(tt.want))
			}
			for _, id := range tt.want {
				if !got[id] {
					t.Errorf("container %s missing", id)
				}
			}
		})
	}
	if err := f.rt.StopContainer(ctx, running, 1); err != nil {
		t.Fatal(err)
	}
}

// TestStopGracefullyRunsTrapAndLeavesNoChild runs both ways a command is
// started (a signal disposition could differ between them).
func TestStopGracefullyRunsTrapAndLeavesNoChild(t *testing.T) {
	forEachStartPath(t, func(t *testing.T, f *fixture, prepare func(*runtimeapi.ContainerConfig)) {
		// The shell forks sleep into the background and waits: a TERM to
		// the process group reaches both, and the trap runs.
		cfg := containerConfig("trap", "sh", "-c", `trap 'echo got TERM; exit 0' TERM; sleep 1000 & echo child=$!; wait`)
		prepare(cfg)
		id := f.run(cfg)
		log := f.waitLog("trap", "child=", 5*time.Second)
		child := childPID(t, log)
		start := time.Now()
		if err := f.rt.StopContainer(context.Background(), id, 10); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("graceful stop took %s: the TERM trap did not end it", d)
		}
		if processAlive(child) {
			t.Errorf("background child %d outlived StopContainer", child)
		}
		s := f.status(id)
		if s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.ExitCode != 0 {
			t.Errorf("after stop: %v exit %d, want EXITED 0 (the trap's exit)", s.State, s.ExitCode)
		}
		f.waitLog("trap", "stdout F got TERM", time.Second)
	})
}

func TestStopKillsAfterTimeout(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	id := f.run(containerConfig("stubborn", "sh", "-c", `trap '' TERM; echo ready; while :; do sleep 0.1; done`))
	f.waitLog("stubborn", "ready", 5*time.Second)
	start := time.Now()
	if err := f.rt.StopContainer(context.Background(), id, 1); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second || d > 4*time.Second {
		t.Errorf("stop took %s, want about the 1s timeout", d)
	}
	s := f.status(id)
	if s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.ExitCode != 137 {
		t.Errorf("after stop: %v exit %d, want EXITED 137 (SIGKILL)", s.State, s.ExitCode)
	}
	if err := f.rt.StopContainer(context.Background(), id, 1); err != nil {
		t.Errorf("stopping a stopped container: %v", err)
	}
}

func childPID(t *testing.T, log string) int {
	t.Helper()
	i := strings.Index(log, "child=")
	rest := log[i+len("child="):]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	pid, err := strconv.Atoi(strings.TrimSpace(rest))
	if err != nil {
		t.Fatalf("no child pid in log: %v", err)
	}
	return pid
}

// TestConcurrentCalls starts, lists, inspects, stops and removes
// containers from several goroutines at once (run it with -race).
func TestConcurrentCalls(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	ctx := context.Background()
	done := make(chan struct{})
	listed := make(chan error, 1)
	go func() {
		defer close(listed)
		for {
			select {
			case <-done:
				return
			default:
			}
			list, err := f.rt.ListContainers(ctx, nil)
			if err != nil {
				listed <- err
				return
			}
			for _, c := range list {
				f.rt.ContainerStatus(ctx, c.Id)
			}
		}
	}()
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			cfg := containerConfig("c"+strconv.Itoa(i), "sh", "-c", "echo hi; sleep 100")
			id, err := f.rt.CreateContainer(ctx, f.sandbox, cfg, f.sbCfg)
			if err == nil {
				err = f.rt.StartContainer(ctx, id)
			}
			if err == nil {
				err = f.rt.StopContainer(ctx, id, 1)
			}
			if err == nil {
				err = f.rt.RemoveContainer(ctx, id)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(done)
	if err := <-listed; err != nil {
		t.Error(err)
	}
	if list, _ := f.rt.ListContainers(ctx, nil); len(list) != 0 {
		t.Errorf("%d containers left", len(list))
	}
}
