package stats

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
)

func ctr(pod, uid, name string, cpu, mem uint64, withCPU bool) *runtimeapi.ContainerStats {
	s := &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{Labels: map[string]string{
			runtime.LabelPodName: pod, runtime.LabelPodNamespace: "ns", runtime.LabelPodUID: uid, runtime.LabelContainerName: name}},
		Memory: &runtimeapi.MemoryUsage{Timestamp: 1, WorkingSetBytes: &runtimeapi.UInt64Value{Value: mem}},
	}
	if withCPU {
		s.Cpu = &runtimeapi.CpuUsage{Timestamp: 1, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: cpu}}
	}
	return s
}

func TestBuildGroupsContainersByPod(t *testing.T) {
	foreign := &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Labels: map[string]string{"other": "runtime"}}}
	sum := Build("n", NodeUsage{CPUNanoSeconds: 5, WorkingSetBytes: 6}, []*runtimeapi.ContainerStats{
		ctr("web", "u1", "sidecar", 10, 1, true), ctr("web", "u1", "app", 20, 2, true),
		ctr("db", "u2", "db", 0, 3, false), foreign,
	})
	if sum.Node.NodeName != "n" || *sum.Node.CPU.UsageCoreNanoSeconds != 5 || *sum.Node.Memory.WorkingSetBytes != 6 {
		t.Errorf("node %+v", sum.Node)
	}
	if len(sum.Pods) != 2 || sum.Pods[0].PodRef.Name != "db" || sum.Pods[1].PodRef.Name != "web" {
		t.Fatalf("pods %+v, want db and web (the foreign container left out)", sum.Pods)
	}
	web := sum.Pods[1]
	if web.Containers[0].Name != "app" || *web.CPU.UsageCoreNanoSeconds != 30 || *web.Memory.WorkingSetBytes != 3 {
		t.Errorf("web %+v: want its containers sorted and summed", web)
	}
	if db := sum.Pods[0]; db.CPU != nil || db.Memory == nil {
		t.Errorf("db CPU %v memory %v: a pod's CPU is unknown while a container's is", db.CPU, db.Memory)
	}
}

func TestNodeReadsProc(t *testing.T) {
	dir := t.TempDir()
	// user nice system idle iowait irq softirq steal
	os.WriteFile(filepath.Join(dir, "stat"), []byte("cpu  100 10 50 9000 40 5 5 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "meminfo"), []byte("MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    400 kB\n"), 0o644)
	u, err := Node(dir, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(170) * uint64(10*time.Millisecond); u.CPUNanoSeconds != want {
		t.Errorf("CPU %d ns, want %d (busy ticks, idle and iowait left out)", u.CPUNanoSeconds, want)
	}
	if u.WorkingSetBytes != 600*1024 || u.AvailableBytes != 400*1024 {
		t.Errorf("memory %d / %d", u.WorkingSetBytes, u.AvailableBytes)
	}
	if _, err := Node(t.TempDir(), time.Now()); err == nil {
		t.Error("no error without /proc files")
	}
}
