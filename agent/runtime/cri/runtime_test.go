package cri_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/cri"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// TestBusyBoxRunsLogsExecsAndStops runs a busybox container through
// containerd's CRI: its image's PATH, its output in the CRI log format at
// the path the agent gives, ExecSync with an exit code and a timeout, a
// stop that ends it with SIGTERM's 143, and NotFound as ErrNotFound.
func TestBusyBoxRunsLogsExecsAndStops(t *testing.T) {
	rt := critest.Runtime(t)
	ctx := context.Background()
	logDir := t.TempDir()
	uid := "uid-" + strings.ReplaceAll(t.Name(), "/", "-")
	sb := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "ns", Uid: uid},
		LogDirectory: logDir,
		Labels:       map[string]string{runtime.LabelPodUID: uid},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}},
	}
	sbID, err := rt.RunPodSandbox(ctx, sb, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { rt.StopPodSandbox(ctx, sbID); rt.RemovePodSandbox(ctx, sbID) }()
	id, err := rt.CreateContainer(ctx, sbID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:    &runtimeapi.ImageSpec{Image: critest.BusyBox},
		Args:     []string{"sh", "-c", "echo hello; echo oops >&2; trap 'exit 143' TERM; while :; do sleep 1; done"},
		LogPath:  "c/0.log",
		Labels:   map[string]string{runtime.LabelPodUID: uid, runtime.LabelContainerName: "c"},
	}, sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "log has both lines", func() bool {
		b, _ := os.ReadFile(filepath.Join(logDir, "c", "0.log"))
		return strings.Contains(string(b), " stdout F hello\n") && strings.Contains(string(b), " stderr F oops\n")
	})
	res, err := rt.ExecSync(ctx, id, []string{"sh", "-c", "echo $PATH; exit 3"}, 5*time.Second)
	if err != nil || res.ExitCode != 3 || !strings.Contains(string(res.Stdout), "/bin") {
		t.Fatalf("ExecSync = %+v, %v; want exit 3 and the image's PATH", res, err)
	}
	if _, err := rt.ExecSync(ctx, id, []string{"sleep", "10"}, time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ExecSync past its timeout = %v, want DeadlineExceeded", err)
	}
	if err := rt.StopContainer(ctx, id, 10); err != nil {
		t.Fatal(err)
	}
	st, err := rt.ContainerStatus(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 143 {
		t.Fatalf("after stop: state %v exit %d, want EXITED 143", st.State, st.ExitCode)
	}
	if err := rt.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ContainerStatus(ctx, id); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("status of a removed container = %v, want ErrNotFound", err)
	}
	if err := rt.RemoveContainer(ctx, id); err != nil {
		t.Fatalf("removing it again = %v, want success", err)
	}
	if dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + cri.PodCgroupParent(cri.CgroupFS, "", uid, "Burstable")); len(dirs) == 0 {
		t.Fatalf("no cgroup %s for the sandbox", cri.PodCgroupParent(cri.CgroupFS, "", uid, "Burstable"))
	}
	if err := rt.StopPodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if err := rt.RemovePodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	if dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + cri.PodCgroupParent(cri.CgroupFS, "", uid, "Burstable")); len(dirs) != 0 {
		t.Errorf("the pod's cgroups are left after its sandbox was removed: %q", dirs)
	}
	if err := rt.RemovePodSandbox(ctx, sbID); err != nil {
		t.Errorf("removing the sandbox again = %v, want success", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
