package cri_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// hostCgroup is the directory of a cgroupfs path on the host: in the
// unified hierarchy (v2) or v1's cpu one.
func hostCgroup(path string) string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return filepath.Join("/sys/fs/cgroup", path)
	}
	return filepath.Join("/sys/fs/cgroup/cpu", path)
}

// TestOlderLayoutPodCgroupKept: a sandbox an older agent made under
// /kite/pod<uid>, adopted after an upgrade, keeps its cgroup: a container
// made in it again goes beside it although the agent names its class's
// tier now, an in-place resize sizes it, and its removal removes it.
func TestOlderLayoutPodCgroupKept(t *testing.T) {
	rt := critest.Runtime(t)
	ctx := context.Background()
	uid := "uid-" + strings.ReplaceAll(t.Name(), "/", "-")
	legacy := "/kite/pod" + uid
	sb := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: uid},
		LogDirectory: t.TempDir(),
		Labels:       map[string]string{runtime.LabelPodUID: uid},
		Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: legacy, SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
	}
	sbID, err := rt.RunPodSandbox(ctx, sb, "")
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	defer func() {
		if !removed {
			rt.StopPodSandbox(ctx, sbID)
			rt.RemovePodSandbox(ctx, sbID)
		}
	}()
	// The agent of today names the Burstable tier in the sandbox config.
	now := proto.Clone(sb).(*runtimeapi.PodSandboxConfig)
	now.Linux.CgroupParent = rt.PodCgroupParent(uid, "Burstable")
	id, err := rt.CreateContainer(ctx, sbID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:    &runtimeapi.ImageSpec{Image: critest.BusyBox},
		Args:     []string{"sleep", "3600"},
		LogPath:  "c/0.log",
		Labels:   map[string]string{runtime.LabelPodUID: uid, runtime.LabelContainerName: "c"},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	if now.Linux.CgroupParent != rt.PodCgroupParent(uid, "Burstable") {
		t.Errorf("the caller's sandbox config was changed: %q", now.Linux.CgroupParent)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(hostCgroup(filepath.Join(legacy, id))); err != nil {
		t.Errorf("the container is not in its pod's cgroup %s: %v", legacy, err)
	}
	if _, err := os.Stat(hostCgroup(rt.PodCgroupParent(uid, "Burstable"))); err == nil {
		t.Errorf("a tier cgroup %s was made for a pod of the older layout", rt.PodCgroupParent(uid, "Burstable"))
	}
	if err := rt.UpdatePodSandboxResources(ctx, sbID, &runtimeapi.LinuxContainerResources{CpuShares: 300, CpuPeriod: 100000, CpuQuota: 30000}); err != nil {
		t.Fatal(err)
	}
	file, want := "cpu.cfs_quota_us", "30000"
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		file, want = "cpu.max", "30000 100000"
	}
	if b, err := os.ReadFile(filepath.Join(hostCgroup(legacy), file)); err != nil || strings.TrimSpace(string(b)) != want {
		t.Errorf("the resize of the older layout's pod cgroup: %s %q (%v), want %q", file, b, err, want)
	}
	if err := rt.StopPodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	removed = true
	if dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + legacy); len(dirs) != 0 {
		t.Errorf("the older layout's pod cgroups are left after its sandbox was removed: %q", dirs)
	}
	if _, err := os.Stat(hostCgroup(legacy)); err == nil {
		t.Errorf("pod cgroup %s left", legacy)
	}
}
