package process

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cgroupPaths are the cgroup directories of one pod or container: one
// directory on a unified (v2) host, one per controller on a v1 host. The
// zero value is "no cgroup": the container runs in the agent's own.
type cgroupPaths struct {
	Unified string `json:"unified,omitempty"`
	Memory  string `json:"memory,omitempty"`
	CPU     string `json:"cpu,omitempty"`
	Pids    string `json:"pids,omitempty"`
}

func (p cgroupPaths) dirs() []string {
	var d []string
	for _, s := range []string{p.Unified, p.Memory, p.CPU, p.Pids} {
		if s != "" {
			d = append(d, s)
		}
	}
	return d
}

func (p cgroupPaths) child(name string) cgroupPaths {
	join := func(s string) string {
		if s == "" {
			return ""
		}
		return filepath.Join(s, name)
	}
	return cgroupPaths{Unified: join(p.Unified), Memory: join(p.Memory), CPU: join(p.CPU), Pids: join(p.Pids)}
}

// cgroupHost is where this host lets the runtime make cgroups: the kite
// parent cgroup (v2) or one per controller (v1), created by New. Zero
// paths with a reason: no writable cgroup, containers run unlimited.
type cgroupHost struct {
	root        cgroupPaths
	unavailable string // why there is no cgroup; "" when there is
	partial     string // which limits cannot be enforced although there is a cgroup
}

// v2Controllers are the controllers the runtime enables and writes.
var v2Controllers = []string{"cpu", "memory", "pids"}

// detectCgroups finds a writable cgroup hierarchy and creates the
// runtime's parent cgroup in it (name under the v2 root, or under each v1
// controller's root). A unified /sys/fs/cgroup is used as v2; otherwise the
// v1 memory, cpu and pids hierarchies, each where mounted and writable.
// An empty name means "kite.slice" on v2 and "kite" on v1.
func detectCgroups(name string) cgroupHost {
	mounts, err := cgroupMounts()
	if err != nil {
		return cgroupHost{unavailable: fmt.Sprintf("cannot read cgroup mounts: %v", err)}
	}
	if root, ok := mounts["cgroup2"]; ok && root == "/sys/fs/cgroup" {
		if name == "" {
			name = "kite.slice"
		}
		dir := filepath.Join(root, name)
		if err := setupV2Parent(root, dir); err != nil {
			return cgroupHost{unavailable: fmt.Sprintf("cgroup v2 at %s is not usable: %v", root, err)}
		}
		return cgroupHost{root: cgroupPaths{Unified: dir}}
	}
	if name == "" {
		name = "kite"
	}
	var p cgroupPaths
	var problems []string
	for _, c := range []struct {
		controller string
		field      *string
	}{{"memory", &p.Memory}, {"cpu", &p.CPU}, {"pids", &p.Pids}} {
		root, ok := mounts[c.controller]
		if !ok {
			problems = append(problems, "no cgroup v1 "+c.controller+" hierarchy")
			continue
		}
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			problems = append(problems, fmt.Sprintf("cgroup v1 %s: %v", c.controller, err))
			continue
		}
		*c.field = dir
	}
	if p.Memory == "" && p.CPU == "" && p.Pids == "" {
		return cgroupHost{unavailable: "no writable cgroup: " + strings.Join(problems, "; ")}
	}
	return cgroupHost{root: p, partial: strings.Join(problems, "; ")}
}

// cgroupMounts maps "cgroup2" and each v1 controller to its mount point,
// from /proc/self/mountinfo.
func cgroupMounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 >= len(fields) {
			continue
		}
		mountPoint, fsType, superOpts := fields[4], fields[sep+1], fields[sep+3]
		switch fsType {
		case "cgroup2":
			if _, ok := m["cgroup2"]; !ok || mountPoint == "/sys/fs/cgroup" {
				m["cgroup2"] = mountPoint
			}
		case "cgroup":
			for _, opt := range strings.Split(superOpts, ",") {
				if opt == "memory" || opt == "cpu" || opt == "pids" {
					if _, ok := m[opt]; !ok {
						m[opt] = mountPoint
					}
				}
			}
		}
	}
	return m, sc.Err()
}

// setupV2Parent creates dir under the v2 root and enables the runtime's
// controllers for it and its children.
func setupV2Parent(root, dir string) error {
	avail, err := os.ReadFile(filepath.Join(root, "cgroup.controllers"))
	if err != nil {
		return err
	}
	have := strings.Fields(string(avail))
	var enable []string
	for _, c := range v2Controllers {
		for _, h := range have {
			if h == c {
				enable = append(enable, "+"+c)
			}
		}
	}
	if len(enable) == 0 {
		return fmt.Errorf("none of %v is available (%q)", v2Controllers, strings.TrimSpace(string(avail)))
	}
	if err := enableControllers(root, enable); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return enableControllers(dir, enable)
}

func enableControllers(dir string, enable []string) error {
	for _, c := range enable {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(c), 0); err != nil {
			return fmt.Errorf("enable %s in %s: %w", c, dir, err)
		}
	}
	return nil
}

// create makes the cgroup directories of p and writes the limits of res
// (nil: none). v2 directories also pass the controllers on to children.
func (p cgroupPaths) create(res *runtimeapi.LinuxContainerResources, parentForChildren bool) error {
	for _, d := range p.dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", d, err)
		}
	}
	if p.Unified != "" && parentForChildren {
		avail, err := os.ReadFile(filepath.Join(p.Unified, "cgroup.controllers"))
		if err != nil {
			return err
		}
		var enable []string
		for _, c := range strings.Fields(string(avail)) {
			enable = append(enable, "+"+c)
		}
		if err := enableControllers(p.Unified, enable); err != nil {
			return err
		}
	}
	if res == nil {
		return nil
	}
	return p.writeLimits(res)
}

type cgroupWrite struct{ dir, file, value string }

// limitWrites turns CRI resources into cgroup file writes for p, in the
// order they must happen (v1 memsw after the memory limit).
func (p cgroupPaths) limitWrites(res *runtimeapi.LinuxContainerResources) []cgroupWrite {
	var w []cgroupWrite
	add := func(dir, file, value string) {
		if dir != "" {
			w = append(w, cgroupWrite{dir, file, value})
		}
	}
	if u := p.Unified; u != "" {
		if res.MemoryLimitInBytes > 0 {
			add(u, "memory.max", strconv.FormatInt(res.MemoryLimitInBytes, 10))
			add(u, "memory.swap.max", "0")
		}
		if res.CpuQuota > 0 {
			period := res.CpuPeriod
			if period <= 0 {
				period = 100000
			}
			add(u, "cpu.max", fmt.Sprintf("%d %d", res.CpuQuota, period))
		}
		if res.CpuShares > 0 {
			add(u, "cpu.weight", strconv.FormatInt(cpuSharesToWeight(res.CpuShares), 10))
		}
		for k, v := range res.Unified {
			add(u, k, v)
		}
		return w
	}
	if res.MemoryLimitInBytes > 0 {
		add(p.Memory, "memory.limit_in_bytes", strconv.FormatInt(res.MemoryLimitInBytes, 10))
		add(p.Memory, "memory.memsw.limit_in_bytes", strconv.FormatInt(res.MemoryLimitInBytes, 10))
	}
	if res.CpuQuota > 0 {
		period := res.CpuPeriod
		if period <= 0 {
			period = 100000
		}
		add(p.CPU, "cpu.cfs_period_us", strconv.FormatInt(period, 10))
		add(p.CPU, "cpu.cfs_quota_us", strconv.FormatInt(res.CpuQuota, 10))
	}
	if res.CpuShares > 0 {
		add(p.CPU, "cpu.shares", strconv.FormatInt(res.CpuShares, 10))
	}
	if v, ok := res.Unified["pids.max"]; ok {
		add(p.Pids, "pids.max", v)
	}
	return w
}

func (p cgroupPaths) writeLimits(res *runtimeapi.LinuxContainerResources) error {
	for _, w := range p.limitWrites(res) {
		path := filepath.Join(w.dir, w.file)
		err := os.WriteFile(path, []byte(w.value), 0)
		// Swap limits exist only where swap accounting is on.
		if err != nil && errors.Is(err, os.ErrNotExist) && strings.Contains(w.file, "sw") {
			continue
		}
		if err != nil {
			return fmt.Errorf("write %s = %q: %w", path, w.value, err)
		}
	}
	return nil
}

// cpuSharesToWeight maps cgroup v1 shares [2, 262144] onto v2 weight
// [1, 10000], as runc and the kubelet do.
func cpuSharesToWeight(shares int64) int64 {
	if shares < 2 {
		shares = 2
	}
	if shares > 262144 {
		shares = 262144
	}
	return 1 + ((shares-2)*9999)/262142
}

// join moves process pid into every cgroup of p.
func (p cgroupPaths) join(pid int) error {
	for _, d := range p.dirs() {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", d, err)
		}
	}
	return nil
}

// procs lists the processes in p's cgroups.
func (p cgroupPaths) procs() []int {
	var pids []int
	for _, d := range p.dirs() {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
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

// populated reports whether any process is left in p.
func (p cgroupPaths) populated() bool {
	if p.Unified != "" {
		b, err := os.ReadFile(filepath.Join(p.Unified, "cgroup.events"))
		if err == nil {
			return !strings.Contains(string(b), "populated 0")
		}
	}
	return len(p.procs()) > 0
}

// kill sends SIGKILL to every process in p: through cgroup.kill on v2,
// which also catches processes forking meanwhile; on v1 by listing the
// members until none is left or the bound passes.
func (p cgroupPaths) kill() {
	if p.Unified != "" {
		if err := os.WriteFile(filepath.Join(p.Unified, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		pids := p.procs()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// oomKills returns how many processes of p the kernel's OOM killer ended
// (v2 memory.events, v1 memory.oom_control "oom_kill").
func (p cgroupPaths) oomKills() int64 {
	var file string
	switch {
	case p.Unified != "":
		file = filepath.Join(p.Unified, "memory.events")
	case p.Memory != "":
		file = filepath.Join(p.Memory, "memory.oom_control")
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

// remove deletes p's directories; they must be empty of processes (a
// child cgroup must be removed first).
func (p cgroupPaths) remove() error {
	var errs []error
	for _, d := range p.dirs() {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
