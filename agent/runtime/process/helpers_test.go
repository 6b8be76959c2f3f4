package process

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kiteruntime "github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

const testCgroupName = "kite-test"

type fixture struct {
	t       *testing.T
	root    string
	logDir  string
	rt      *Runtime
	sandbox string
	sbCfg   *runtimeapi.PodSandboxConfig
}

func newFixture(t *testing.T, o Options) *fixture {
	t.Helper()
	dir := t.TempDir()
	if o.RootDir == "" {
		o.RootDir = filepath.Join(dir, "runtime")
	}
	if o.CgroupName == "" {
		o.CgroupName = testCgroupName
	}
	rt, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f := &fixture{t: t, root: o.RootDir, rt: rt, logDir: filepath.Join(dir, "pods", "ns_pod_uid1")}
	f.sbCfg = &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "pod", Namespace: "ns", Uid: "uid1"},
		LogDirectory: f.logDir,
		Labels:       map[string]string{kiteruntime.LabelPodName: "pod", kiteruntime.LabelPodNamespace: "ns", kiteruntime.LabelPodUID: "uid1"},
	}
	f.sandbox, err = rt.RunPodSandbox(context.Background(), f.sbCfg, "")
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.RemovePodSandbox(context.Background(), f.sandbox); err != nil {
			t.Errorf("RemovePodSandbox: %v", err)
		}
	})
	return f
}

func containerConfig(name string, command ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "busybox:1.36"},
		Command:  command,
		LogPath:  name + "/0.log",
		Labels:   map[string]string{kiteruntime.LabelContainerName: name},
	}
}

// run creates and starts a container.
func (f *fixture) run(cfg *runtimeapi.ContainerConfig) string {
	f.t.Helper()
	ctx := context.Background()
	id, err := f.rt.CreateContainer(ctx, f.sandbox, cfg, f.sbCfg)
	if err != nil {
		f.t.Fatalf("CreateContainer: %v", err)
	}
	if err := f.rt.StartContainer(ctx, id); err != nil {
		f.t.Fatalf("StartContainer: %v", err)
	}
	return id
}

func (f *fixture) status(id string) *runtimeapi.ContainerStatus {
	f.t.Helper()
	s, err := f.rt.ContainerStatus(context.Background(), id)
	if err != nil {
		f.t.Fatalf("ContainerStatus: %v", err)
	}
	return s
}

// waitExited waits until the container has exited and returns its status.
func (f *fixture) waitExited(id string, within time.Duration) *runtimeapi.ContainerStatus {
	f.t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := f.status(id)
		if s.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			return s
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("container %s still %v after %s", s.Metadata.Name, s.State, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLog waits until the container's log holds a line with want and
// returns the log.
func (f *fixture) waitLog(name, want string, within time.Duration) string {
	f.t.Helper()
	deadline := time.Now().Add(within)
	for {
		b, _ := os.ReadFile(filepath.Join(f.logDir, name, "0.log"))
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("log of %s has no %q after %s; it holds:\n%s", name, want, within, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// criLine is one parsed CRI log entry.
type criLine struct {
	ts      time.Time
	stream  string
	partial bool
	content string
}

func parseCRILog(t *testing.T, log string) []criLine {
	t.Helper()
	var out []criLine
	for _, l := range strings.SplitAfter(log, "\n") {
		if l == "" {
			continue
		}
		if !strings.HasSuffix(l, "\n") {
			t.Fatalf("log line %q does not end in a newline", l)
		}
		parts := strings.SplitN(strings.TrimSuffix(l, "\n"), " ", 4)
		if len(parts) != 4 {
			t.Fatalf("log line %q: want 4 fields", l)
		}
		ts, err := time.Parse(supervisor.CRITimeFormat, parts[0])
		if err != nil || len(parts[0]) != len(ts.Format(supervisor.CRITimeFormat)) {
			t.Fatalf("log line %q: timestamp %q is not RFC 3339 with 9 fixed digits: %v", l, parts[0], err)
		}
		if parts[1] != "stdout" && parts[1] != "stderr" {
			t.Fatalf("log line %q: stream %q", l, parts[1])
		}
		if parts[2] != "F" && parts[2] != "P" {
			t.Fatalf("log line %q: tag %q", l, parts[2])
		}
		out = append(out, criLine{ts: ts, stream: parts[1], partial: parts[2] == "P", content: parts[3]})
	}
	return out
}

func processAlive(pid int) bool {
	_, state, err := supervisor.ProcStat(pid)
	return err == nil && state != 'Z'
}

// forEachStartPath runs test once for each way a command is started: exec'd
// by the supervisor directly, and through the container's init (which v1
// cgroups and mounts need). prepare makes a config take the path: for init
// it adds a read-only mount, which needs mount namespaces.
func forEachStartPath(t *testing.T, test func(t *testing.T, f *fixture, prepare func(*runtimeapi.ContainerConfig))) {
	t.Run("started directly", func(t *testing.T) {
		test(t, newFixture(t, Options{NoCgroups: true}), func(*runtimeapi.ContainerConfig) {})
	})
	t.Run("started from a thread in v1 cgroups", func(t *testing.T) {
		f := newFixture(t, Options{})
		if c := f.rt.cgroups; c.unavailable != "" || c.root.Unified != "" {
			t.Skipf("needs writable v1 cgroups (%q, unified %q)", c.unavailable, c.root.Unified)
		}
		test(t, f, func(*runtimeapi.ContainerConfig) {})
	})
	t.Run("started through init", func(t *testing.T) {
		f := newFixture(t, Options{NoCgroups: true})
		if f.rt.mountsOff != "" {
			t.Skipf("init is taken for mounts, and this host has no mount namespaces: %s", f.rt.mountsOff)
		}
		test(t, f, func(cfg *runtimeapi.ContainerConfig) {
			cfg.Mounts = append(cfg.Mounts, &runtimeapi.Mount{HostPath: t.TempDir(), ContainerPath: t.TempDir(), Readonly: true})
		})
	})
}
