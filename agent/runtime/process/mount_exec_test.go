package process

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kiteruntime "github.com/kite-project/kite/agent/runtime"
)

// mountFixture has a host directory with a file, and a container path
// (under the test's temporary directory, since the container shares the
// host's filesystem) where the container sees it.
func mountFixture(t *testing.T) (f *fixture, hostDir, target string) {
	t.Helper()
	f = newFixture(t, Options{NoCgroups: true})
	if why := f.rt.mountsOff; why != "" {
		t.Skipf("needs mount namespaces (Linux, root): %s", why)
	}
	hostDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "config"), []byte("from-the-volume\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostDir, "probe.sh"), []byte("#!/bin/sh\necho probed\nexit 4\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	target = filepath.Join(t.TempDir(), "etc", "app")
	return f, hostDir, target
}

func TestMountsAreVisibleOnlyInsideTheContainer(t *testing.T) {
	f, hostDir, target := mountFixture(t)
	cfg := containerConfig("mnt", "sh", "-c", `cat config; touch new 2>/dev/null && echo writable || echo read-only; sleep 100`)
	cfg.WorkingDir = target
	cfg.Mounts = []*runtimeapi.Mount{{HostPath: hostDir, ContainerPath: target, Readonly: true}}
	id := f.run(cfg)
	log := f.waitLog("mnt", "read-only", 5*time.Second)
	if !strings.Contains(log, "stdout F from-the-volume") {
		t.Errorf("container did not see the volume's file at %s:\n%s", target, log)
	}
	if _, err := os.Stat(filepath.Join(target, "config")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the bind at %s leaked to the host's mount namespace (stat: %v)", target, err)
	}
	if _, err := os.Stat(filepath.Join(hostDir, "new")); err == nil {
		t.Error("a read-only mount was written")
	}

	res, err := f.rt.ExecSync(context.Background(), id, []string{"cat", "config"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != "from-the-volume\n" || res.ExitCode != 0 {
		t.Errorf("exec in the mount namespace: %q %q exit %d, want the volume's file", res.Stdout, res.Stderr, res.ExitCode)
	}
	// A command that exists only in the volume runs from its container path.
	res, err = f.rt.ExecSync(context.Background(), id, []string{filepath.Join(target, "probe.sh")}, 5*time.Second)
	if err != nil || string(res.Stdout) != "probed\n" || res.ExitCode != 4 {
		t.Errorf("exec of the volume's probe.sh: %q exit %d, %v; want probed, 4", res.Stdout, res.ExitCode, err)
	}
	if err := f.rt.StopContainer(context.Background(), id, 0); err != nil {
		t.Fatal(err)
	}
}

func TestWritableMountIsWritten(t *testing.T) {
	f, hostDir, target := mountFixture(t)
	cfg := containerConfig("rw", "sh", "-c", `echo written > `+target+`/out`)
	cfg.Mounts = []*runtimeapi.Mount{{HostPath: hostDir, ContainerPath: target}}
	f.waitExited(f.run(cfg), 10*time.Second)
	if b, err := os.ReadFile(filepath.Join(hostDir, "out")); err != nil || string(b) != "written\n" {
		t.Errorf("host sees %q, %v; want what the container wrote", b, err)
	}
}

func TestMountsRefusedWhereUnsupported(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	f.rt.mountsOff = "pretend: no mount namespaces" // as New finds it on a host without them
	cfg := containerConfig("mnt", "true")
	cfg.Mounts = []*runtimeapi.Mount{{HostPath: t.TempDir(), ContainerPath: "/data"}}
	_, err := f.rt.CreateContainer(context.Background(), f.sandbox, cfg, f.sbCfg)
	if !errors.Is(err, ErrMountsUnsupported) || !strings.Contains(err.Error(), "pretend") {
		t.Errorf("CreateContainer with mounts = %v, want ErrMountsUnsupported with the reason", err)
	}
}

// The termination-message file is the one mount a container does without
// where mounts are unsupported: every container has one (the API defaults
// terminationMessagePath), and its message then falls back to the log.
func TestTerminationMessageMountLeftOutWhereUnsupported(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	f.rt.mountsOff = "pretend: no mount namespaces" // as New finds it on a host without them
	msgFile := filepath.Join(t.TempDir(), "0")
	if err := os.WriteFile(msgFile, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	cfg := containerConfig("msg", "true")
	cfg.Annotations = map[string]string{kiteruntime.AnnotationTerminationMessagePath: "/dev/termination-log"}
	cfg.Mounts = []*runtimeapi.Mount{{HostPath: msgFile, ContainerPath: "/dev/termination-log"}}
	f.waitExited(f.run(cfg), 10*time.Second)

	cfg = containerConfig("msg-and-volume", "true")
	cfg.Annotations = map[string]string{kiteruntime.AnnotationTerminationMessagePath: "/dev/termination-log"}
	cfg.Mounts = []*runtimeapi.Mount{{HostPath: msgFile, ContainerPath: "/dev/termination-log"}, {HostPath: t.TempDir(), ContainerPath: "/data"}}
	if _, err := f.rt.CreateContainer(context.Background(), f.sandbox, cfg, f.sbCfg); !errors.Is(err, ErrMountsUnsupported) {
		t.Errorf("CreateContainer with a volume as well = %v, want ErrMountsUnsupported", err)
	}
}

func TestExecSync(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	wd := t.TempDir()
	cfg := containerConfig("target", "sleep", "100")
	cfg.WorkingDir = wd
	cfg.Envs = []*runtimeapi.KeyValue{{Key: "PROBE", Value: []byte("ok")}}
	id := f.run(cfg)
	ctx := context.Background()
	tests := []struct {
		name       string
		cmd        []string
		wantOut    string
		wantErrOut string
		wantCode   int32
	}{
		{"output and exit 0", []string{"sh", "-c", "echo out; echo err >&2"}, "out\n", "err\n", 0},
		{"non-zero exit is a result", []string{"sh", "-c", "exit 3"}, "", "", 3},
		{"container env and working dir", []string{"sh", "-c", `echo "$PROBE $(pwd)"`}, "ok " + wd + "\n", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := f.rt.ExecSync(ctx, id, tt.cmd, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Stdout) != tt.wantOut || string(res.Stderr) != tt.wantErrOut || res.ExitCode != tt.wantCode {
				t.Errorf("got %q %q %d, want %q %q %d", res.Stdout, res.Stderr, res.ExitCode, tt.wantOut, tt.wantErrOut, tt.wantCode)
			}
		})
	}
	t.Run("timeout kills the command", func(t *testing.T) {
		start := time.Now()
		_, err := f.rt.ExecSync(ctx, id, []string{"sh", "-c", "sleep 30 & sleep 30"}, 300*time.Millisecond)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want DeadlineExceeded", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("timed-out exec returned after %s", d)
		}
	})
	t.Run("a command that cannot start is an error", func(t *testing.T) {
		if _, err := f.rt.ExecSync(ctx, id, []string{"/no/such/probe"}, time.Second); err == nil {
			t.Error("no error")
		}
	})
	if err := f.rt.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.ExecSync(ctx, id, []string{"true"}, time.Second); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("exec in a stopped container: %v, want not running", err)
	}
}
