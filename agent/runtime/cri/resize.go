package cri

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
)

var (
	_ runtime.ResourceUpdater    = (*Runtime)(nil)
	_ runtime.PodResourceUpdater = (*Runtime)(nil)
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

// setPodCgroup writes the limits of a pod's cgroup, as the kubelet's pod
// container manager does before it tells the runtime: containerd 1.6
// creates the cgroup parent of a sandbox with no limits and changes none.
// Only the cgroupfs driver on a unified (v2) hierarchy is written here;
// elsewhere the pod's cgroup keeps what it had.
func (r *Runtime) setPodCgroup(uid string, res *runtimeapi.LinuxContainerResources) error {
	if r.driver != CgroupFS || uid == "" {
		return nil
	}
	dir := filepath.Join("/sys/fs/cgroup", CgroupParent(r.driver, uid))
	if _, err := os.Stat(filepath.Join(dir, "cgroup.controllers")); err != nil {
		return nil
	}
	for _, w := range podCgroupWrites(res) {
		if err := os.WriteFile(filepath.Join(dir, w[0]), []byte(w[1]), 0); err != nil {
			return fmt.Errorf("write %s of pod %s: %w", w[0], uid, err)
		}
	}
	return nil
}

// podCgroupWrites are the cgroup v2 files and values of res (runc's
// conversions): cpu.weight from shares, cpu.max from quota and period
// ("max" without a quota), memory.max ("max" without a limit).
func podCgroupWrites(res *runtimeapi.LinuxContainerResources) [][2]string {
	var w [][2]string
	if s := res.GetCpuShares(); s > 0 {
		w = append(w, [2]string{"cpu.weight", strconv.FormatInt(1+((s-2)*9999)/262142, 10)})
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
	return append(w, [2]string{"memory.max", mem})
}
