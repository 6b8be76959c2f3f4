package process

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kiteruntime "github.com/kite-project/kite/agent/runtime"
)

func TestSandboxLifecycle(t *testing.T) {
	f := newFixture(t, Options{})
	ctx := context.Background()
	st, err := f.rt.PodSandboxStatus(ctx, f.sandbox)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != runtimeapi.PodSandboxState_SANDBOX_READY || st.Metadata.Uid != "uid1" || st.Labels[kiteruntime.LabelPodName] != "pod" ||
		st.Linux.Namespaces.Options.Network != runtimeapi.NamespaceMode_NODE {
		t.Errorf("new sandbox status %v", st)
	}
	sleeper := f.run(containerConfig("sleeper", "sleep", "100"))
	pid := startedOf(t, f.rt, sleeper).Process.PID

	if err := f.rt.StopPodSandbox(ctx, f.sandbox); err != nil {
		t.Fatal(err)
	}
	if processAlive(pid) {
		t.Error("StopPodSandbox left a container process running")
	}
	if st, _ := f.rt.PodSandboxStatus(ctx, f.sandbox); st.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("stopped sandbox is %v", st.State)
	}
	ready := &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}
	if l, _ := f.rt.ListPodSandbox(ctx, ready); len(l) != 0 {
		t.Errorf("ready sandboxes after stop: %v", l)
	}
	if _, err := f.rt.CreateContainer(ctx, f.sandbox, containerConfig("late", "true"), f.sbCfg); err == nil {
		t.Error("created a container in a stopped sandbox")
	}

	c, _ := f.rt.container(sleeper)
	cgroup := f.rt.sandboxes[f.sandbox].Cgroup
	if err := f.rt.RemovePodSandbox(ctx, f.sandbox); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.PodSandboxStatus(ctx, f.sandbox); !errors.Is(err, kiteruntime.ErrNotFound) {
		t.Errorf("status of a removed sandbox: %v, want ErrNotFound", err)
	}
	if list, _ := f.rt.ListContainers(ctx, nil); len(list) != 0 {
		t.Errorf("containers left after RemovePodSandbox: %d", len(list))
	}
	if _, err := os.Stat(c.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("container records left: %v", err)
	}
	for _, d := range cgroup.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("sandbox cgroup %s left: %v", d, err)
		}
	}
	// Stop and remove of an unknown sandbox succeed, as the CRI asks.
	if err := f.rt.StopPodSandbox(ctx, "nope"); err != nil {
		t.Error(err)
	}
	if err := f.rt.RemovePodSandbox(ctx, "nope"); err != nil {
		t.Error(err)
	}
	if err := f.rt.RemoveContainer(ctx, "nope"); err != nil {
		t.Error(err)
	}
	if _, err := f.rt.ContainerStatus(ctx, "nope"); !errors.Is(err, kiteruntime.ErrNotFound) {
		t.Errorf("status of an unknown container: %v", err)
	}

}

func TestNewRefusesBadOptions(t *testing.T) {
	file := t.TempDir() + "/file"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"no root dir", Options{}, "RootDir is required"},
		{"one log file", Options{RootDir: t.TempDir(), ContainerLogMaxFiles: 1}, "at least 2"},
		{"root dir is a file", Options{RootDir: file}, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// The process runtime runs only the default handler: a sandbox asking for
// another is refused and leaves nothing behind.
func TestRuntimeHandlers(t *testing.T) {
	for _, c := range []struct {
		handler string
		ok      bool
	}{
		{"", true},
		{"runc", false},
		{"nope", false},
		{"process", false},
	} {
		err := CheckHandler(c.handler)
		if (err == nil) != c.ok {
			t.Errorf("CheckHandler(%q) = %v, want ok %v", c.handler, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), `RuntimeHandler "`+c.handler+`" not supported`) {
			t.Errorf("CheckHandler(%q) = %q, want it to name the handler", c.handler, err)
		}
	}
	f := newFixture(t, Options{})
	ctx := context.Background()
	before, _ := f.rt.ListPodSandbox(ctx, nil)
	if id, err := f.rt.RunPodSandbox(ctx, f.sbCfg, "runc"); err == nil {
		t.Fatalf("RunPodSandbox with handler runc = %s, want an error", id)
	}
	if after, _ := f.rt.ListPodSandbox(ctx, nil); len(after) != len(before) {
		t.Errorf("a refused sandbox is listed: %d sandboxes, had %d", len(after), len(before))
	}
}
