// Package stats is the agent's part of the kubelet's Summary API
// (/stats/summary, k8s.io/kubelet/pkg/apis/stats/v1alpha1): what the node
// and each pod's containers use of CPU and memory, as the metrics API
// (and from it kubectl top and the HPAs) reads it. Build is the pure
// decision that groups the runtime's container stats by pod; Node reads
// the node's own usage from /proc.
package stats

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kite-project/kite/agent/runtime"
)

// NodeUsage is one reading of the node's CPU time and memory.
type NodeUsage struct {
	Time metav1.Time
	// CPUNanoSeconds is the CPU time the node has spent busy since boot.
	CPUNanoSeconds uint64
	// WorkingSetBytes is the memory in use: MemTotal less MemAvailable.
	WorkingSetBytes uint64
	// AvailableBytes is MemAvailable.
	AvailableBytes uint64
}

// Build is the summary of node nodeName: the node's usage and one entry
// per pod of the containers' stats, grouped by the pod labels the agent
// puts on every container (runtime.LabelPodUID and friends); containers
// without them (not the agent's) are left out. Pods and containers are
// sorted by namespace/name; a pod's usage is its containers' sum.
func Build(nodeName string, node NodeUsage, containers []*runtimeapi.ContainerStats) *statsapi.Summary {
	nodeCPU, nodeMem := node.CPUNanoSeconds, node.WorkingSetBytes
	out := &statsapi.Summary{Node: statsapi.NodeStats{
		NodeName: nodeName,
		CPU:      &statsapi.CPUStats{Time: node.Time, UsageCoreNanoSeconds: &nodeCPU},
		Memory:   &statsapi.MemoryStats{Time: node.Time, WorkingSetBytes: &nodeMem, AvailableBytes: &node.AvailableBytes},
	}}
	byUID := map[string]*statsapi.PodStats{}
	for _, c := range containers {
		labels := c.GetAttributes().GetLabels()
		uid := labels[runtime.LabelPodUID]
		if uid == "" {
			continue
		}
		pod := byUID[uid]
		if pod == nil {
			pod = &statsapi.PodStats{PodRef: statsapi.PodReference{
				Name: labels[runtime.LabelPodName], Namespace: labels[runtime.LabelPodNamespace], UID: uid}}
			byUID[uid] = pod
		}
		cs := statsapi.ContainerStats{Name: labels[runtime.LabelContainerName]}
		if cpu := c.GetCpu(); cpu != nil && cpu.UsageCoreNanoSeconds != nil {
			v := cpu.UsageCoreNanoSeconds.Value
			cs.CPU = &statsapi.CPUStats{Time: metav1.NewTime(time.Unix(0, cpu.Timestamp)), UsageCoreNanoSeconds: &v}
		}
		if mem := c.GetMemory(); mem != nil && mem.WorkingSetBytes != nil {
			v := mem.WorkingSetBytes.Value
			cs.Memory = &statsapi.MemoryStats{Time: metav1.NewTime(time.Unix(0, mem.Timestamp)), WorkingSetBytes: &v}
		}
		pod.Containers = append(pod.Containers, cs)
	}
	for _, pod := range byUID {
		sort.Slice(pod.Containers, func(i, j int) bool { return pod.Containers[i].Name < pod.Containers[j].Name })
		pod.CPU, pod.Memory = sumOf(pod.Containers)
		out.Pods = append(out.Pods, *pod)
	}
	sort.Slice(out.Pods, func(i, j int) bool {
		a, b := out.Pods[i].PodRef, out.Pods[j].PodRef
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out
}

// sumOf adds the containers' usage up: a pod's CPU or memory is known
// only when every container's is (a partial sum would read as a drop),
// stamped with the latest of their times.
func sumOf(cs []statsapi.ContainerStats) (*statsapi.CPUStats, *statsapi.MemoryStats) {
	var cpu, mem uint64
	var cpuAt, memAt metav1.Time
	cpuOK, memOK := len(cs) > 0, len(cs) > 0
	for _, c := range cs {
		if c.CPU == nil {
			cpuOK = false
		} else {
			cpu += *c.CPU.UsageCoreNanoSeconds
			if c.CPU.Time.After(cpuAt.Time) {
				cpuAt = c.CPU.Time
			}
		}
		if c.Memory == nil {
			memOK = false
		} else {
			mem += *c.Memory.WorkingSetBytes
			if c.Memory.Time.After(memAt.Time) {
				memAt = c.Memory.Time
			}
		}
	}
	var cpuStats *statsapi.CPUStats
	var memStats *statsapi.MemoryStats
	if cpuOK {
		cpuStats = &statsapi.CPUStats{Time: cpuAt, UsageCoreNanoSeconds: &cpu}
	}
	if memOK {
		memStats = &statsapi.MemoryStats{Time: memAt, WorkingSetBytes: &mem}
	}
	return cpuStats, memStats
}

// userHZ is the unit of /proc/stat's times (USER_HZ, 100 on every Linux
// architecture Kite runs on).
const userHZ = 100

// Node reads the node's usage from procRoot ("/proc"): the busy CPU time
// (user, nice, system, irq, softirq, steal of /proc/stat's "cpu" line) and
// the memory in use (MemTotal less MemAvailable of /proc/meminfo).
func Node(procRoot string, now time.Time) (NodeUsage, error) {
	u := NodeUsage{Time: metav1.NewTime(now)}
	stat, err := os.ReadFile(procRoot + "/stat")
	if err != nil {
		return u, fmt.Errorf("node CPU: %w", err)
	}
	line, _, _ := bytes.Cut(stat, []byte{'\n'})
	fields := bytes.Fields(line)
	if len(fields) < 9 || string(fields[0]) != "cpu" {
		return u, fmt.Errorf("node CPU: unexpected %s/stat: %q", procRoot, line)
	}
	var ticks uint64
	// user nice system idle iowait irq softirq steal: idle and iowait are not busy.
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseUint(string(fields[i]), 10, 64)
		if err != nil {
			return u, fmt.Errorf("node CPU: %s/stat field %d: %w", procRoot, i, err)
		}
		ticks += n
	}
	u.CPUNanoSeconds = ticks * (uint64(time.Second) / userHZ)
	meminfo, err := os.Open(procRoot + "/meminfo")
	if err != nil {
		return u, fmt.Errorf("node memory: %w", err)
	}
	defer meminfo.Close()
	var total, available uint64
	s := bufio.NewScanner(meminfo)
	for s.Scan() {
		f := bytes.Fields(s.Bytes())
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.ParseUint(string(f[1]), 10, 64)
		switch string(f[0]) {
		case "MemTotal:":
			total = n * 1024
		case "MemAvailable:":
			available = n * 1024
		}
	}
	if total == 0 {
		return u, fmt.Errorf("node memory: no MemTotal in %s/meminfo", procRoot)
	}
	u.AvailableBytes = available
	if available < total {
		u.WorkingSetBytes = total - available
	}
	return u, nil
}
