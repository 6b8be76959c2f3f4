package cri

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
)

var (
	_ runtime.ResourceUpdater    = (*Runtime)(nil)
	_ runtime.PodResourceUpdater = (*Runtime)(nil)
	_ runtime.PodCgroupLimiter   = (*Runtime)(nil)
)

// UpdateContainerResources sets the cgroup limits of a running container,
// as the kubelet's in-place resize does through the CRI.
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.LinuxContainerResources) error {
	_, err := r.rs.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: resources})
	return wrap(err, "UpdateContainerResources", id)
}

// UpdatePodSandboxResources sets the pod's cgroup limits (setPodCgroup)
// and tells the runtime, as the kubelet's updatePodSandboxResources: the
// telling is best effort, a
// runtime that has not implemented it (containerd 1.6, whose CRI has no
// such call; containerd 2.2 answers Unknown "not implemented yet") is
// not an error.
func (r *Runtime) UpdatePodSandboxResources(ctx context.Context, id string, resources *runtimeapi.LinuxContainerResources) error {
	st, err := r.PodSandboxStatus(ctx, id)
	if err != nil {
		return err
	}
	if err := r.setPodCgroup(st.GetMetadata().GetUid(), resources); err != nil {
		return err
	}
	_, err = r.rs.UpdatePodSandboxResources(ctx, &runtimeapi.UpdatePodSandboxResourcesRequest{PodSandboxId: id, Resources: resources})
	if st, ok := status.FromError(err); ok && err != nil && (st.Code() == codes.Unimplemented || st.Code() == codes.Unknown && strings.Contains(st.Message(), "not implemented")) {
		return nil
	}
	return wrap(err, "UpdatePodSandboxResources", id)
}

// LimitPodCgroup writes the limits of pod uid's cgroup (setPodCgroup)
// without a CRI call: a new sandbox's, which the kubelet sizes in its pod
// container manager and never tells the runtime of (no sandbox status
// read, no UpdatePodSandboxResources, which containerd 1.6 does not
// implement).
func (r *Runtime) LimitPodCgroup(_ context.Context, uid string, resources *runtimeapi.LinuxContainerResources) error {
	return r.setPodCgroup(uid, resources)
}

// setPodCgroup writes the limits of a pod's cgroup, as the kubelet's pod
// container manager does before it tells the runtime: containerd 1.6
// creates the cgroup parent of a sandbox with no limits and changes none.
// With --pod-max-pids the pod's pids.max too, as the kubelet's
// EnsureExists. The pod's cgroup is found where it is (podCgroupOf): its
// class's tier, or an older agent's layout for a pod adopted after an
// upgrade. Only the cgroupfs driver is written here (v2 unified, or v1's
// cpu, memory, hugetlb and pids hierarchies); under systemd the pod's
// slice keeps what it had.
func (r *Runtime) setPodCgroup(uid string, res *runtimeapi.LinuxContainerResources) error {
	if r.driver != CgroupFS || uid == "" {
		return nil
	}
	parent := r.podCgroupOf(uid, "")
	if parent == "" {
		return nil // the runtime made none (its cgroups are off): nothing to size
	}
	pids := r.opts.PodPidsLimit
	var writes [][3]string
	if controllers, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", parent, "cgroup.controllers")); err == nil {
		var sizes []string
		if slices.Contains(strings.Fields(string(controllers)), "hugetlb") {
			sizes = hostHugePageSizes()
		}
		for _, w := range podCgroupWritesV2(res, sizes, pids) {
			writes = append(writes, [3]string{filepath.Join("/sys/fs/cgroup", parent), w[0], w[1]})
		}
	} else {
		for _, w := range podCgroupWritesV1(res, hostHugePageSizes(), pids) {
			dir := filepath.Join("/sys/fs/cgroup", w[0], parent)
			if _, err := os.Stat(dir); err == nil {
				writes = append(writes, [3]string{dir, w[1], w[2]})
			}
		}
	}
	for _, w := range writes {
		path := filepath.Join(w[0], w[1])
		// The reservation limits came with Linux 5.7: written where
		// there, as runc does.
		if strings.Contains(w[1], ".rsvd.") {
			if _, err := os.Stat(path); err != nil {
				continue
			}
		}
		if err := os.WriteFile(path, []byte(w[2]), 0); err != nil {
			return fmt.Errorf("write %s of pod %s: %w", path, uid, err)
		}
	}
	return nil
}

// hostHugePageSizes are the huge page sizes of the host
// (/sys/kernel/mm/hugepages/hugepages-<n>kB), named as cgroups name
// them, as runc's HugePageSizes.
var hostHugePageSizes = sync.OnceValue(func() []string {
	entries, _ := os.ReadDir("/sys/kernel/mm/hugepages")
	var sizes []string
	for _, e := range entries {
		kb, ok := strings.CutPrefix(e.Name(), "hugepages-")
		kb, kB := strings.CutSuffix(kb, "kB")
		n, err := strconv.ParseInt(kb, 10, 64)
		if !ok || !kB || err != nil {
			continue
		}
		if name, ok := runtime.HugePageSizeName(n << 10); ok {
			sizes = append(sizes, name)
		}
	}
	return sizes
})

// hugetlbWrites are the huge page limits of res for each of the host's
// page sizes, 0 for a size res does not name (a pod uses only the huge
// pages it requested), as the kubelet's cgroup manager sets them: the
// limit file and its reservation twin (.rsvd), of suffix
// ".limit_in_bytes" (v1) or ".max" (v2).
func hugetlbWrites(res *runtimeapi.LinuxContainerResources, sizes []string, suffix string) [][2]string {
	var w [][2]string
	for _, size := range sizes {
		var limit uint64
		for _, l := range res.GetHugepageLimits() {
			if l.GetPageSize() == size {
				limit = l.GetLimit()
			}
		}
		v := strconv.FormatUint(limit, 10)
		w = append(w, [2]string{"hugetlb." + size + suffix, v}, [2]string{"hugetlb." + size + ".rsvd" + suffix, v})
	}
	return w
}

// podCgroupWritesV2 are the cgroup v2 files and values of res, as the
// kubelet's cgroup manager writes a pod cgroup: cpu.weight from shares
// (cpuWeight), cpu.max from quota and period ("max" without a quota),
// memory.max ("max" without a limit), the huge page limits of
// hugePageSizes (those of the host where the hugetlb controller is
// enabled; none else), and pids.max when pids (--pod-max-pids) is above
// 0 (else the file is not written, as the kubelet leaves it).
func podCgroupWritesV2(res *runtimeapi.LinuxContainerResources, hugePageSizes []string, pids int64) [][2]string {
	var w [][2]string
	if s := res.GetCpuShares(); s > 0 {
		w = append(w, [2]string{"cpu.weight", strconv.FormatUint(cpuWeight(uint64(s)), 10)})
	}
	period := res.GetCpuPeriod()
	if period == 0 {
		period = 100000
	}
	quota := "max"
	if q := res.GetCpuQuota(); q > 0 {
		quota = strconv.FormatInt(q, 10)
	}
	w = append(w, [2]string{"cpu.max", quota + " " + strconv.FormatInt(period, 10)})
	mem := "max"
	if m := res.GetMemoryLimitInBytes(); m > 0 {
		mem = strconv.FormatInt(m, 10)
	}
	w = append(w, [2]string{"memory.max", mem})
	w = append(w, hugetlbWrites(res, hugePageSizes, ".max")...)
	if pids > 0 {
		w = append(w, [2]string{"pids.max", strconv.FormatInt(pids, 10)})
	}
	return w
}

// podCgroupWritesV1 are the cgroup v1 hierarchy, file and value of res:
// -1 is no quota, no memory limit; the huge page limits of
// hugePageSizes (the hugetlb hierarchy, where mounted); pids.max when
// pids is above 0.
func podCgroupWritesV1(res *runtimeapi.LinuxContainerResources, hugePageSizes []string, pids int64) [][3]string {
	var w [][3]string
	if s := res.GetCpuShares(); s > 0 {
		w = append(w, [3]string{"cpu", "cpu.shares", strconv.FormatInt(s, 10)})
	}
	if p := res.GetCpuPeriod(); p > 0 {
		w = append(w, [3]string{"cpu", "cpu.cfs_period_us", strconv.FormatInt(p, 10)})
	}
	quota := int64(-1)
	if q := res.GetCpuQuota(); q > 0 {
		quota = q
	}
	w = append(w, [3]string{"cpu", "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)})
	mem := int64(-1)
	if m := res.GetMemoryLimitInBytes(); m > 0 {
		mem = m
	}
	w = append(w, [3]string{"memory", "memory.limit_in_bytes", strconv.FormatInt(mem, 10)})
	for _, h := range hugetlbWrites(res, hugePageSizes, ".limit_in_bytes") {
		w = append(w, [3]string{"hugetlb", h[0], h[1]})
	}
	if pids > 0 {
		w = append(w, [3]string{"pids", "pids.max", strconv.FormatInt(pids, 10)})
	}
	return w
}

// cpuWeight is the cgroup v2 weight of cpu shares as the kubelet 1.37
// converts them for the pod cgroups it writes itself
// (github.com/opencontainers/cgroups v0.0.7,
// ConvertCPUSharesToCgroupV2Value): a quadratic in log2(shares) through
// 2 -> 1, 1024 -> 100 (both defaults) and 262144 -> 10000. runc 1.1 (the
// one beside containerd 1.6) still maps containers' shares linearly
// (1024 -> 39); the pod cgroup is the kubelet's, so it takes the
// kubelet's.
func cpuWeight(shares uint64) uint64 {
	switch {
	case shares == 0:
		return 0
	case shares <= 2:
		return 1
	case shares >= 262144:
		return 10000
	}
	l := math.Log2(float64(shares))
	return uint64(math.Ceil(math.Pow(10, (l*l+125*l)/612.0-7.0/34.0)))
}
