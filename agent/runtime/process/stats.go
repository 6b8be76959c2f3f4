package process

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kiteruntime "github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

var _ kiteruntime.Stats = (*Runtime)(nil)

// ListContainerStats reads the running containers' cgroups: CPU time
// (v2 cpu.stat usage_usec, v1 cpuacct.usage) and the memory working set
// (usage less inactive file pages, as cAdvisor and the kubelet count it).
// A container without a cgroup (none was writable) or whose files cannot
// be read has no usage in its stats.
func (r *Runtime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	cf := &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	if filter != nil {
		cf.Id, cf.PodSandboxId, cf.LabelSelector = filter.Id, filter.PodSandboxId, filter.LabelSelector
	}
	list, err := r.ListContainers(ctx, cf)
	if err != nil {
		return nil, err
	}
	var out []*runtimeapi.ContainerStats
	for _, ctr := range list {
		c, err := r.container(ctr.Id)
		if err != nil {
			continue // removed meanwhile
		}
		now := time.Now().UnixNano()
		st := &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{
			Id: ctr.Id, Metadata: ctr.Metadata, Labels: ctr.Labels, Annotations: ctr.Annotations}}
		if cpu, ok := cgroupCPU(c.spec.Cgroup); ok {
			st.Cpu = &runtimeapi.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu}}
		}
		if ws, ok := cgroupWorkingSet(c.spec.Cgroup); ok {
			st.Memory = &runtimeapi.MemoryUsage{Timestamp: now, WorkingSetBytes: &runtimeapi.UInt64Value{Value: ws}}
		}
		out = append(out, st)
	}
	return out, nil
}

// cgroupCPU is the CPU time of the cgroup in nanoseconds.
func cgroupCPU(p supervisor.CgroupPaths) (uint64, bool) {
	if p.Unified != "" {
		usec, ok := statField(filepath.Join(p.Unified, "cpu.stat"), "usage_usec")
		return usec * 1000, ok
	}
	if p.CPU != "" {
		// cpuacct is mounted with cpu on most v1 hosts (the "cpu,cpuacct"
		// hierarchy).
		if ns, ok := readUint(filepath.Join(p.CPU, "cpuacct.usage")); ok {
			return ns, true
		}
	}
	// Else (cpuacct a hierarchy of its own, where the runtime makes no
	// cgroup): the CPU time of the cgroup's processes and of the children
	// they reaped, from /proc. What exited children nobody waited for
	// used is lost, so a rate can dip; it is never negative for long.
	for _, d := range []string{p.CPU, p.Memory, p.Pids} {
		if d != "" {
			return procsCPU(filepath.Join(d, "cgroup.procs"))
		}
	}
	return 0, false
}

// procsCPU sums utime, stime, cutime and cstime of the processes listed
// in a cgroup.procs file, in nanoseconds.
func procsCPU(procsFile string) (uint64, bool) {
	b, err := os.ReadFile(procsFile)
	if err != nil {
		return 0, false
	}
	var total uint64
	for _, pid := range bytes.Fields(b) {
		stat, err := os.ReadFile("/proc/" + string(pid) + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// The command may hold spaces and parentheses: the fields start
		// after its last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		// f[0] is field 3 (state): utime..cstime are fields 14..17.
		if len(f) < 15 {
			continue
		}
		for _, v := range f[11:15] {
			n, _ := strconv.ParseUint(string(v), 10, 64)
			total += n
		}
	}
	return total * uint64(time.Second/100), true // USER_HZ is 100
}

// cgroupWorkingSet is the cgroup's memory usage less its inactive file
// pages (never below zero), cAdvisor's working set.
func cgroupWorkingSet(p supervisor.CgroupPaths) (uint64, bool) {
	var usage, inactive uint64
	var ok bool
	switch {
	case p.Unified != "":
		if usage, ok = readUint(filepath.Join(p.Unified, "memory.current")); !ok {
			return 0, false
		}
		inactive, _ = statField(filepath.Join(p.Unified, "memory.stat"), "inactive_file")
	case p.Memory != "":
		if usage, ok = readUint(filepath.Join(p.Memory, "memory.usage_in_bytes")); !ok {
			return 0, false
		}
		inactive, _ = statField(filepath.Join(p.Memory, "memory.stat"), "total_inactive_file")
	default:
		return 0, false
	}
	if inactive > usage {
		return 0, true
	}
	return usage - inactive, true
}

func readUint(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	return v, err == nil
}

// statField reads "key value" from a cgroup stat file.
func statField(path, key string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := bytes.Cut(s.Bytes(), []byte{' '})
		if ok && string(k) == key {
			n, err := strconv.ParseUint(string(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
