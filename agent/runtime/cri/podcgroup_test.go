package cri

import (
	"reflect"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestPodCgroupWritesAsKubelet: the pod cgroup files the agent writes,
// with the kubelet's conversions (v2 weight from shares; no quota or
// memory limit is "max" on v2, -1 on v1).
func TestPodCgroupWritesAsKubelet(t *testing.T) {
	limited := &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 1 << 28}
	if got, want := podCgroupWritesV2(limited, nil, 0), [][2]string{{"cpu.weight", "100"}, {"cpu.max", "50000 100000"}, {"memory.max", "268435456"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v2 limited: %v, want %v", got, want)
	}
	if got, want := podCgroupWritesV2(&runtimeapi.LinuxContainerResources{CpuShares: 2}, nil, 0), [][2]string{{"cpu.weight", "1"}, {"cpu.max", "max 100000"}, {"memory.max", "max"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v2 unlimited: %v, want %v", got, want)
	}
	if got, want := podCgroupWritesV1(limited, nil, 0), [][3]string{{"cpu", "cpu.shares", "1024"}, {"cpu", "cpu.cfs_period_us", "100000"}, {"cpu", "cpu.cfs_quota_us", "50000"}, {"memory", "memory.limit_in_bytes", "268435456"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v1 limited: %v, want %v", got, want)
	}
	if got, want := podCgroupWritesV1(&runtimeapi.LinuxContainerResources{CpuShares: 2}, nil, 0), [][3]string{{"cpu", "cpu.shares", "2"}, {"cpu", "cpu.cfs_quota_us", "-1"}, {"memory", "memory.limit_in_bytes", "-1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v1 unlimited: %v, want %v", got, want)
	}
}

// TestPodCgroupHugePages: every huge page size of the host is limited,
// to the pod's request or to 0, with its reservation twin.
func TestPodCgroupHugePages(t *testing.T) {
	res := &runtimeapi.LinuxContainerResources{CpuShares: 2, HugepageLimits: []*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 4 << 20}}}
	sizes := []string{"2MB", "1GB"}
	if got, want := podCgroupWritesV2(res, sizes, 0)[3:], [][2]string{{"hugetlb.2MB.max", "4194304"}, {"hugetlb.2MB.rsvd.max", "4194304"}, {"hugetlb.1GB.max", "0"}, {"hugetlb.1GB.rsvd.max", "0"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v2: %v, want %v", got, want)
	}
	if got, want := podCgroupWritesV1(res, sizes, 0)[3:], [][3]string{{"hugetlb", "hugetlb.2MB.limit_in_bytes", "4194304"}, {"hugetlb", "hugetlb.2MB.rsvd.limit_in_bytes", "4194304"},
		{"hugetlb", "hugetlb.1GB.limit_in_bytes", "0"}, {"hugetlb", "hugetlb.1GB.rsvd.limit_in_bytes", "0"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v1: %v, want %v", got, want)
	}
}

// TestCPUWeightAsKubelet: the cases of github.com/opencontainers/cgroups
// v0.0.7's TestConvertCPUSharesToCgroupV2Value.
func TestCPUWeightAsKubelet(t *testing.T) {
	for shares, want := range map[uint64]uint64{0: 0, 1: 1, 2: 1, 3: 2, 1024: 100, 262143: 10000, 262144: 10000, 262145: 10000} {
		if got := cpuWeight(shares); got != want {
			t.Errorf("cpuWeight(%d) = %d, want %d", shares, got, want)
		}
	}
}

// TestPodCgroupPids: --pod-max-pids is the pod cgroup's pids.max; 0 or
// -1 leaves the file as it is (unlimited), as the kubelet.
func TestPodCgroupPids(t *testing.T) {
	res := &runtimeapi.LinuxContainerResources{CpuShares: 2}
	if got := podCgroupWritesV1(res, nil, 100); !reflect.DeepEqual(got[len(got)-1], [3]string{"pids", "pids.max", "100"}) {
		t.Errorf("v1 with a limit: %v", got)
	}
	if got := podCgroupWritesV2(res, nil, 100); !reflect.DeepEqual(got[len(got)-1], [2]string{"pids.max", "100"}) {
		t.Errorf("v2 with a limit: %v", got)
	}
	for _, pids := range []int64{0, -1} {
		if got := podCgroupWritesV1(res, nil, pids); len(got) != 3 {
			t.Errorf("v1 with %d: %v, want no pids.max", pids, got)
		}
		if got := podCgroupWritesV2(res, nil, pids); len(got) != 3 {
			t.Errorf("v2 with %d: %v, want no pids.max", pids, got)
		}
	}
}
