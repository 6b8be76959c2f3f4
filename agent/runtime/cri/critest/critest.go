// Package critest gives a test package one containerd of its own: started
// at the first Runtime call in a temporary directory (its socket, root and
// state there), with the images of scripts/images imported, and stopped
// by Main after the package's tests, once every sandbox it ran has been
// stopped and removed, so that no container, shim or mount outlives the
// tests.
//
// Tests that need it skip, saying why, when containerd or runc is not
// installed or the tests do not run as root — unless KITE_REQUIRE_CRI is
// set (CI sets it after installing them), then they fail.
package critest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime/containerd"
	"github.com/kite-project/kite/agent/runtime/cri"
)

// The images scripts/images builds.
const (
	BusyBox        = "registry.k8s.io/e2e-test-images/busybox:1.37.0-2"
	BusyBoxNonRoot = "kite.local/busybox-nonroot:1"
	Pause          = containerd.PauseImage
)

// RequireEnv, when set, turns every skip for a missing containerd into a
// failure.
const RequireEnv = "KITE_REQUIRE_CRI"

type shared struct {
	once sync.Once
	dir  string
	proc *containerd.Process
	rt   *cri.Runtime
	err  error
	skip string
}

// the package's containerd: one per test binary, which is one per
// package.
var pkg shared

// Main runs the tests, then stops the package's containerd if one was
// started. Call it from TestMain: os.Exit(critest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if err := pkg.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "critest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Runtime is the package's containerd as a CRI runtime, started at the
// first call. It skips t (or fails it, with KITE_REQUIRE_CRI) when
// containerd cannot run here.
func Runtime(t testing.TB) *cri.Runtime {
	t.Helper()
	pkg.once.Do(pkg.start)
	if pkg.skip != "" {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("%s is set but %s", RequireEnv, pkg.skip)
		}
		t.Skipf("skipped: %s (install containerd, runc and busybox-static and run as root; set %s=1 to fail instead)", pkg.skip, RequireEnv)
	}
	if pkg.err != nil {
		t.Fatalf("critest: %v", pkg.err)
	}
	return pkg.rt
}

// Connect is a second connection to the package's containerd with opts
// (their Endpoint and CgroupDriver are the package's), closed at the
// test's end: for a test that sets the runtime's own options.
func Connect(t testing.TB, opts cri.Options) *cri.Runtime {
	t.Helper()
	Runtime(t)
	opts.Endpoint, opts.CgroupDriver = pkg.proc.Endpoint(), driver(pkg.proc)
	rt, err := cri.New(t.Context(), opts)
	if err != nil {
		t.Fatalf("critest: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// Dir is the package's containerd's directory (its log is containerd.log).
func Dir() string { return pkg.dir }

func (s *shared) start() {
	if os.Geteuid() != 0 {
		s.skip = "containerd needs root"
		return
	}
	if err := containerd.Available(""); err != nil {
		s.skip = err.Error()
		return
	}
	if _, err := exec.LookPath("ctr"); err != nil {
		s.skip = "ctr (containerd's client, to import the test images) not found"
		return
	}
	dir, err := os.MkdirTemp("", "kite-containerd-")
	if err != nil {
		s.err = err
		return
	}
	s.dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s.proc, err = containerd.Start(ctx, containerd.Options{Dir: filepath.Join(dir, "containerd")})
	if err != nil {
		s.err = err
		return
	}
	if s.rt, err = cri.New(ctx, cri.Options{Endpoint: s.proc.Endpoint(), CgroupDriver: driver(s.proc)}); err != nil {
		s.err = err
		return
	}
	s.err = ImportTestImages(ctx, s.proc.Endpoint())
}

func driver(p *containerd.Process) cri.CgroupDriver {
	if p.SystemdCgroup() {
		return cri.CgroupSystemd
	}
	return cri.CgroupFS
}

// ImportTestImages builds the test images (scripts/images, into the
// repository's .cache/images, rebuilt only when their inputs changed) and
// imports them into the containerd at endpoint.
func ImportTestImages(ctx context.Context, endpoint string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "images"), "--import", endpoint)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("scripts/images --import %s: %w\n%s", endpoint, err, out)
	}
	return nil
}

// repoRoot is the directory of go.mod above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "scripts", "images")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("critest: no repository root (go.mod beside scripts/images) above the working directory")
		}
		dir = parent
	}
}

// stop removes every sandbox (stopping its containers), stops containerd
// and removes its directory.
func (s *shared) stop() error {
	if s.proc == nil {
		if s.dir != "" {
			os.RemoveAll(s.dir)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var first error
	if s.rt != nil {
		if err := RemoveAll(ctx, s.rt); err != nil {
			first = err
		}
		s.rt.Close()
	}
	s.proc.Stop()
	// Whatever is still mounted below (a sandbox's shm, a rootfs) would
	// keep RemoveAll from its files.
	unmountBelow(s.dir)
	if os.Getenv("KITE_CRITEST_KEEP") != "" {
		fmt.Fprintf(os.Stderr, "critest: KITE_CRITEST_KEEP: containerd's directory %s kept\n", s.dir)
		return first
	}
	if err := os.RemoveAll(s.dir); err != nil && first == nil {
		first = err
	}
	return first
}

// RemoveAll stops and removes every container and sandbox of rt.
func RemoveAll(ctx context.Context, rt *cri.Runtime) error {
	// Sandboxes first: stopping one stops its containers too, even one
	// that an agent stopped in the middle of its start left to start
	// after it was listed. Every step is tried whatever failed before it,
	// so that an error leaves as little running as it can (a shim left
	// behind outlives the test binary).
	var errs []error
	sbs, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		errs = append(errs, rt.StopPodSandbox(ctx, sb.Id))
	}
	cs, err := rt.ListContainers(ctx, nil)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, c := range cs {
		if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			rt.StopContainer(ctx, c.Id, 0)
		}
		if err := rt.RemoveContainer(ctx, c.Id); err != nil {
			errs = append(errs, fmt.Errorf("critest: remove container %s (listed %v): %w", c.Id, c.State, err))
		}
	}
	if sbs, err = rt.ListPodSandbox(ctx, nil); err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, sb := range sbs {
		errs = append(errs, rt.StopPodSandbox(ctx, sb.Id), rt.RemovePodSandbox(ctx, sb.Id))
	}
	return errors.Join(errs...)
}
