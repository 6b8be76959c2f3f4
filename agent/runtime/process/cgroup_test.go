package process

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// cgroupFixture is a fixture whose runtime has writable cgroups, or skips
// the test saying why there are none.
func cgroupFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, Options{})
	if why := f.rt.cgroups.unavailable; why != "" {
		t.Skipf("needs writable cgroups (root, v2 or v1 memory/cpu/pids): %s", why)
	}
	return f
}

func TestLimitWrites(t *testing.T) {
	res := &runtimeapi.LinuxContainerResources{
		MemoryLimitInBytes: 64 << 20, CpuQuota: 50000, CpuPeriod: 100000, CpuShares: 512,
		Unified: map[string]string{"pids.max": "10"},
	}
	tests := []struct {
		name  string
		paths supervisor.CgroupPaths
		res   *runtimeapi.LinuxContainerResources
		want  []cgroupWrite
	}{
		{"v2", supervisor.CgroupPaths{Unified: "/u"}, res, []cgroupWrite{
			{"/u", "memory.max", "67108864"}, {"/u", "memory.swap.max", "0"},
			{"/u", "cpu.max", "50000 100000"}, {"/u", "cpu.weight", "20"}, {"/u", "pids.max", "10"},
		}},
		{"v1", supervisor.CgroupPaths{Memory: "/m", CPU: "/c", Pids: "/p"}, res, []cgroupWrite{
			{"/m", "memory.limit_in_bytes", "67108864"}, {"/m", "memory.memsw.limit_in_bytes", "67108864"},
			{"/c", "cpu.cfs_period_us", "100000"}, {"/c", "cpu.cfs_quota_us", "50000"}, {"/c", "cpu.shares", "512"},
			{"/p", "pids.max", "10"},
		}},
		{"v1 without a pids hierarchy", supervisor.CgroupPaths{Memory: "/m"}, &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 1 << 20, Unified: map[string]string{"pids.max": "10"}}, []cgroupWrite{
			{"/m", "memory.limit_in_bytes", "1048576"}, {"/m", "memory.memsw.limit_in_bytes", "1048576"},
		}},
		{"quota without period gets 100ms", supervisor.CgroupPaths{Unified: "/u"}, &runtimeapi.LinuxContainerResources{CpuQuota: 20000}, []cgroupWrite{
			{"/u", "cpu.max", "20000 100000"},
		}},
		{"nothing set", supervisor.CgroupPaths{Unified: "/u"}, &runtimeapi.LinuxContainerResources{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cgroupLimitWrites(tt.paths, tt.res)
			if len(got) != len(tt.want) {
				t.Fatalf("writes %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("write %d: %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestContainerCgroupHasItsLimits(t *testing.T) {
	f := cgroupFixture(t)
	cfg := containerConfig("limited", "sleep", "100")
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{
		MemoryLimitInBytes: 48 << 20, CpuQuota: 25000, CpuPeriod: 100000, Unified: map[string]string{"pids.max": "7"},
	}}
	id := f.run(cfg)
	c, _ := f.rt.container(id)
	st := startedOf(t, f.rt, id)
	for _, w := range cgroupLimitWrites(c.spec.Cgroup, cfg.Linux.Resources) {
		if strings.Contains(w.file, "swap") || strings.Contains(w.file, "memsw") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(w.dir, w.file))
		if err != nil {
			t.Errorf("read %s: %v", w.file, err)
			continue
		}
		if got := strings.TrimSpace(string(b)); got != w.value {
			t.Errorf("%s = %q, want %q", w.file, got, w.value)
		}
	}
	// In every one of its cgroups from its start, and the supervisor in
	// none of them (on v1 it forks the command from a thread that joined
	// them, and that thread is gone once the start is reported).
	for _, d := range c.spec.Cgroup.Dirs() {
		procs := supervisor.CgroupPaths{Unified: d}.Procs()
		if !slices.Contains(procs, st.Process.PID) {
			t.Errorf("the container's process %d is not in its cgroup %s (%v)", st.Process.PID, d, procs)
		}
		if slices.Contains(procs, st.Supervisor.PID) {
			t.Errorf("the supervisor %d is in the container's cgroup %s (%v)", st.Supervisor.PID, d, procs)
		}
	}
	if err := f.rt.StopContainer(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
	if c.spec.Cgroup.Populated() {
		t.Error("cgroup still populated after StopContainer")
	}
}

func TestMemoryLimitExceededIsOOMKilled(t *testing.T) {
	f := cgroupFixture(t)
	if f.rt.cgroups.root.Unified == "" && f.rt.cgroups.root.Memory == "" {
		t.Skip("needs a writable memory cgroup")
	}
	cfg := containerConfig("hog", "sh", "-c", "exec dd if=/dev/zero of=/dev/null bs=128M count=1")
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 32 << 20}}
	id := f.run(cfg)
	s := f.waitExited(id, 20*time.Second)
	if s.Reason != "OOMKilled" || s.ExitCode != 137 {
		t.Errorf("over its memory limit: reason %q exit %d, want OOMKilled 137", s.Reason, s.ExitCode)
	}
}

// TestStopKillsProcessesThatLeftTheGroup: a daemon that setsid()s out of
// the container's process group is still in its cgroup, and StopContainer
// returns only once it too is gone.
func TestStopKillsProcessesThatLeftTheGroup(t *testing.T) {
	f := cgroupFixture(t)
	id := f.run(containerConfig("daemon", "sh", "-c", `setsid sleep 1000 & echo child=$!; sleep 1000`))
	child := childPID(t, f.waitLog("daemon", "child=", 5*time.Second))
	if err := f.rt.StopContainer(context.Background(), id, 5); err != nil {
		t.Fatal(err)
	}
	if processAlive(child) {
		t.Errorf("daemon %d that left the process group outlived StopContainer", child)
	}
}

func TestStatusSaysWhetherCgroupsWork(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	st, err := f.rt.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	conds := map[string]*runtimeapi.RuntimeCondition{}
	for _, c := range st.Conditions {
		conds[c.Type] = c
	}
	if !conds[runtimeapi.RuntimeReady].GetStatus() || !conds[runtimeapi.NetworkReady].GetStatus() {
		t.Errorf("RuntimeReady/NetworkReady not true: %v", st.Conditions)
	}
	if c := conds[ConditionResourceLimits]; c == nil || c.Status || c.Reason != ReasonNoWritableCgroup || c.Message == "" {
		t.Errorf("without cgroups: %v, want %s false with reason %s", c, ConditionResourceLimits, ReasonNoWritableCgroup)
	}
	// And containers run anyway.
	id := f.run(containerConfig("free", "true"))
	if s := f.waitExited(id, 10*time.Second); s.ExitCode != 0 {
		t.Errorf("container without cgroups exited %d", s.ExitCode)
	}
	v, err := f.rt.Version(context.Background())
	if err != nil || v.RuntimeName != RuntimeName || v.RuntimeVersion == "" || v.RuntimeApiVersion != "v1" {
		t.Errorf("Version = %v, %v", v, err)
	}
}

// TestUnifiedCgroupKillAndPopulated exercises the v2 side (join,
// populated, cgroup.kill, remove) on whatever cgroup2 hierarchy is
// mounted, with or without controllers: a process and its child that
// left its process group are both killed through cgroup.kill.
func TestUnifiedCgroupKillAndPopulated(t *testing.T) {
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	root, ok := mounts["cgroup2"]
	if !ok {
		t.Skip("needs a cgroup2 hierarchy")
	}
	p := supervisor.CgroupPaths{Unified: filepath.Join(root, "kite-test-"+strconv.Itoa(os.Getpid()))}
	if err := createCgroup(p, nil, false); err != nil {
		t.Skipf("needs a writable cgroup2 hierarchy: %v", err)
	}
	defer p.Remove()
	if _, err := os.Stat(filepath.Join(p.Unified, "cgroup.kill")); err != nil {
		t.Skipf("needs cgroup.kill (Linux 5.14): %v", err)
	}
	cg, err := os.Open(p.Unified)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	cmd := exec.Command("sh", "-c", "setsid sleep 1000 & sleep 1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd()), Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitDone := make(chan struct{})
	go func() { cmd.Wait(); close(waitDone) }()
	for deadline := time.Now().Add(5 * time.Second); len(p.Procs()) < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("cgroup holds %v, want the shell and two sleeps", p.Procs())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !p.Populated() {
		t.Fatal("populated() false with three processes in the cgroup")
	}
	p.Kill()
	<-waitDone
	for deadline := time.Now().Add(5 * time.Second); p.Populated(); {
		if time.Now().After(deadline) {
			t.Fatalf("still populated after cgroup.kill: %v", p.Procs())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Remove(); err != nil {
		t.Errorf("remove: %v", err)
	}
}

func TestOOMScoreAdjIsSet(t *testing.T) {
	forEachStartPath(t, func(t *testing.T, f *fixture, prepare func(*runtimeapi.ContainerConfig)) {
		cfg := containerConfig("adj", "sh", "-c", `echo "adj $(cat /proc/$$/oom_score_adj)"; exec sleep 100`)
		cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{OomScoreAdj: 873}}
		prepare(cfg)
		id := f.run(cfg)
		f.waitLog("adj", "stdout F adj 873", 5*time.Second)
		// The supervisor lent its own value for the fork and took it back.
		own, _ := os.ReadFile("/proc/self/oom_score_adj")
		sup, _ := os.ReadFile("/proc/" + strconv.Itoa(startedOf(t, f.rt, id).Supervisor.PID) + "/oom_score_adj")
		if string(sup) != string(own) {
			t.Errorf("supervisor's oom_score_adj %q, want the agent's %q", sup, own)
		}
		if err := f.rt.StopContainer(context.Background(), id, 0); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStartingSupervisorYieldsToTheAgent: a supervisor's scheduling
// autogroup is at nice 10 only while it starts its container; afterwards
// it and the container (a session, so an autogroup, of its own) are at 0.
func TestStartingSupervisorYieldsToTheAgent(t *testing.T) {
	if _, err := os.Stat("/proc/self/autogroup"); err != nil {
		t.Skipf("no autogroup scheduling: %v", err)
	}
	forEachStartPath(t, func(t *testing.T, f *fixture, prepare func(*runtimeapi.ContainerConfig)) {
		cfg := containerConfig("nice", "sleep", "100")
		prepare(cfg)
		id := f.run(cfg)
		st := startedOf(t, f.rt, id)
		for what, pid := range map[string]int{"supervisor": st.Supervisor.PID, "container": st.Process.PID} {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/autogroup")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(strings.TrimSpace(string(b)), " nice 0") {
				t.Errorf("the %s's autogroup once it runs: %q, want nice 0", what, b)
			}
		}
		if err := f.rt.StopContainer(context.Background(), id, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func TestExecRunsInTheContainerCgroup(t *testing.T) {
	f := cgroupFixture(t)
	id := f.run(containerConfig("target", "sleep", "100"))
	res, err := f.rt.ExecSync(context.Background(), id, []string{"sh", "-c", "sleep 0.2; cat /proc/$$/cgroup"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Stdout), "ctr-"+id) {
		t.Errorf("exec's cgroups:\n%s\nwant the container's (ctr-%s)", res.Stdout, id)
	}
	if err := f.rt.StopContainer(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
}
