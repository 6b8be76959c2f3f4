package supervisor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CgroupPaths are the cgroup directories of one pod or container: one
// directory on a unified (v2) host, one per controller on a v1 host. The
// zero value is "no cgroup": the container runs in the agent's own.
type CgroupPaths struct {
	Unified string `json:"unified,omitempty"`
	Memory  string `json:"memory,omitempty"`
	CPU     string `json:"cpu,omitempty"`
	Pids    string `json:"pids,omitempty"`
}

// Dirs lists p's directories.
func (p CgroupPaths) Dirs() []string {
	var d []string
	for _, s := range []string{p.Unified, p.Memory, p.CPU, p.Pids} {
		if s != "" {
			d = append(d, s)
		}
	}
	return d
}

// Child is the cgroup name under each of p's directories.
func (p CgroupPaths) Child(name string) CgroupPaths {
	join := func(s string) string {
		if s == "" {
			return ""
		}
		return joinPath(s, name)
	}
	return CgroupPaths{Unified: join(p.Unified), Memory: join(p.Memory), CPU: join(p.CPU), Pids: join(p.Pids)}
}

// Join moves process pid into every cgroup of p.
func (p CgroupPaths) Join(pid int) error {
	for _, d := range p.Dirs() {
		if err := os.WriteFile(joinPath(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", d, err)
		}
	}
	return nil
}

// JoinThread moves only thread tid of this process into every cgroup of
// p, through the v1 "tasks" files (v2 moves whole processes only, and has
// CgroupFD instead). A process the thread forks starts in them.
func (p CgroupPaths) JoinThread(tid int) error {
	for _, d := range []string{p.Memory, p.CPU, p.Pids} {
		if d == "" {
			continue
		}
		if err := os.WriteFile(joinPath(d, "tasks"), []byte(strconv.Itoa(tid)), 0); err != nil {
			return fmt.Errorf("join cgroup %s with thread %d: %w", d, tid, err)
		}
	}
	return nil
}

// Procs lists the processes in p's cgroups.
func (p CgroupPaths) Procs() []int {
	var pids []int
	for _, d := range p.Dirs() {
		b, err := os.ReadFile(joinPath(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// Populated reports whether any process is left in p.
func (p CgroupPaths) Populated() bool {
	if p.Unified != "" {
		b, err := os.ReadFile(joinPath(p.Unified, "cgroup.events"))
		if err == nil {
			return !strings.Contains(string(b), "populated 0")
		}
	}
	return len(p.Procs()) > 0
}

// Kill sends SIGKILL to every process in p: through cgroup.kill on v2,
// which also catches processes forking meanwhile; on v1 by listing the
// members until none is left or the bound passes.
func (p CgroupPaths) Kill() {
	if p.Unified != "" {
		if err := os.WriteFile(joinPath(p.Unified, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		pids := p.Procs()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// OOMKills returns how many processes of p the kernel's OOM killer ended
// (v2 memory.events, v1 memory.oom_control "oom_kill").
func (p CgroupPaths) OOMKills() int64 {
	var file string
	switch {
	case p.Unified != "":
		file = joinPath(p.Unified, "memory.events")
	case p.Memory != "":
		file = joinPath(p.Memory, "memory.oom_control")
	default:
		return 0
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// Remove deletes p's directories; they must be empty of processes (a
// child cgroup must be removed first).
func (p CgroupPaths) Remove() error {
	var errs []error
	for _, d := range p.Dirs() {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
