package cri

import (
	"reflect"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestPodCgroupWritesAsRunc: the pod cgroup files a pod-level resize
// writes, with runc's conversions (v2 weight from shares; no quota or
// memory limit is "max" on v2, -1 on v1).
func TestPodCgroupWritesAsRunc(t *testing.T) {
	limited := &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 1 << 28}
	if got, want := podCgroupWritesV2(limited), [][2]string{{"cpu.weight", "39"}, {"cpu.max", "50000 100000"}, {"memory.max", "268435456"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v2 limited: %v, want %v", got, want)
	}
	if got, want := podCgroupWritesV2(&runtimeapi.LinuxContainerResources{CpuShares: 2}), [][2]string{{"cpu.weight", "1"}, {"cpu.max", "max 100000"}, {"memory.max", "max"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v2 unlimited: %v, want %v", got, want)
	}
	if got, want := podCgroupWritesV1(limited), [][3]string{{"cpu", "cpu.shares", "1024"}, {"cpu", "cpu.cfs_period_us", "100000"}, {"cpu", "cpu.cfs_quota_us", "50000"}, {"memory", "memory.limit_in_bytes", "268435456"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v1 limited: %v, want %v", got, want)
	}
	if got, want := podCgroupWritesV1(&runtimeapi.LinuxContainerResources{CpuShares: 2}), [][3]string{{"cpu", "cpu.shares", "2"}, {"cpu", "cpu.cfs_quota_us", "-1"}, {"memory", "memory.limit_in_bytes", "-1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v1 unlimited: %v, want %v", got, want)
	}
}
