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
// which also catches processes forking meanwhile; on v1 (and on v2 where
// cgroup.kill fails) by listing the members until none is left or the
// bound passes, each signalled through a pidfd (see killListed).
func (p CgroupPaths) Kill() {
	if p.Unified != "" {
		if err := os.WriteFile(joinPath(p.Unified, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	killListed(p.Procs, 2*time.Second)
}

// killListed SIGKILLs the processes that procs lists until it lists none
// or bound passes. A PID read from cgroup.procs names a member only at the
// moment of the read: the member may exit and its PID go to an unrelated
// process before the signal (invariant 6). So each listed PID is first
// pinned with a pidfd, the members are listed again, and only a PID
// listed again is signalled, through its pidfd: the pidfd's process is
// then the member (one PID cannot name two live processes), or it has
// exited since and the signal reaches nobody. A pidfd never comes to name
// another process. Kernels without pidfds (before 5.3) get kill(2) on the
// PIDs listed twice, which narrows the window without closing it.
func killListed(procs func() []int, bound time.Duration) {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		pids := procs()
		if len(pids) == 0 {
			return
		}
		fds := make(map[int]int, len(pids))
		noPidfd := false
		for _, pid := range pids {
			fd, err := pidfdOpen(pid)
			switch {
			case err == nil:
				fds[pid] = fd
			case errors.Is(err, syscall.ENOSYS):
				noPidfd = true
			}
		}
		for _, pid := range procs() {
			if fd, ok := fds[pid]; ok {
				pidfdSendSignal(fd, syscall.SIGKILL)
			} else if noPidfd {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		for _, fd := range fds {
			syscall.Close(fd)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The pidfd system calls have one number on every architecture.
const (
	sysPidfdSendSignal = 424
	sysPidfdOpen       = 434
)

func pidfdOpen(pid int) (int, error) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

func pidfdSendSignal(fd int, sig syscall.Signal) error {
	_, _, errno := syscall.Syscall6(sysPidfdSendSignal, uintptr(fd), uintptr(sig), 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
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
