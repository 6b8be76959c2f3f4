package process

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// cgroupHost is where this host lets the runtime make cgroups: the kite
// parent cgroup (v2) or one per controller (v1), created by New. Zero
// paths with a reason: no writable cgroup, containers run unlimited.
type cgroupHost struct {
	root        supervisor.CgroupPaths
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
		return cgroupHost{root: supervisor.CgroupPaths{Unified: dir}}
	}
	if name == "" {
		name = "kite"
	}
	var p supervisor.CgroupPaths
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

// createCgroup makes the cgroup directories of p and writes the limits of res
// (nil: none). v2 directories also pass the controllers on to children.
func createCgroup(p supervisor.CgroupPaths, res *runtimeapi.LinuxContainerResources, parentForChildren bool) error {
	for _, d := range p.Dirs() {
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
	return writeCgroupLimits(p, res)
}

type cgroupWrite struct{ dir, file, value string }

// cgroupLimitWrites turns CRI resources into cgroup file writes for p, in the
// order they must happen (v1 memsw after the memory limit).
func cgroupLimitWrites(p supervisor.CgroupPaths, res *runtimeapi.LinuxContainerResources) []cgroupWrite {
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

func writeCgroupLimits(p supervisor.CgroupPaths, res *runtimeapi.LinuxContainerResources) error {
	for _, w := range cgroupLimitWrites(p, res) {
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
