package process

import (
	"github.com/kite-project/kite/agent/runtime/process/supervisor"
	kiteversion "github.com/kite-project/kite/version"

	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kiteruntime "github.com/kite-project/kite/agent/runtime"
)

// RuntimeName is what Version reports as the runtime's name.
const RuntimeName = "kite-process"

// Conditions that Status reports besides the CRI's RuntimeReady and
// NetworkReady, so that the agent can show on its Node what this host
// cannot give its containers. Their status is false where the host
// lacks the feature; containers run anyway.
const (
	// ConditionResourceLimits: the runtime can put containers in cgroups
	// and enforce their memory, CPU and PID limits.
	ConditionResourceLimits = "ResourceLimits"
	// ConditionVolumeMounts: the runtime can give a container a private
	// mount namespace with its volumes bound at their container paths.
	ConditionVolumeMounts = "VolumeMounts"

	ReasonNoWritableCgroup        = "NoWritableCgroup"
	ReasonMountNamespacesDisabled = "MountNamespacesUnavailable"
)

// ErrNoCommand is wrapped by CreateContainer's error for a container
// without a command: the runtime cannot take one from the image, which it
// does not pull. The agent reports it as CreateContainerConfigError.
var ErrNoCommand = errors.New("container has no command")

// ErrMountsUnsupported is wrapped by CreateContainer's error for a
// container with mounts on a host where the runtime cannot bind them.
var ErrMountsUnsupported = errors.New("the process runtime cannot mount volumes on this host")

// Options configure a Runtime.
type Options struct {
	// RootDir holds the runtime's state (see records.go); a Runtime
	// started again over the same directory finds its containers again.
	// Required.
	RootDir string
	// ContainerLogMaxSize is the size in bytes at which a container's log
	// is rotated (the kubelet's containerLogMaxSize); 0 means 10 MiB, a
	// negative value never rotates.
	ContainerLogMaxSize int64
	// ContainerLogMaxFiles is how many log files of a container are kept,
	// the current one included (containerLogMaxFiles); 0 means 5. At
	// least 2.
	ContainerLogMaxFiles int
	// CgroupName is the runtime's parent cgroup, under the v2 root or
	// under each v1 controller; "" means "kite.slice" (v2) or "kite" (v1).
	CgroupName string
	// NoCgroups runs containers without cgroups even where the host has
	// writable ones (no limits, no OOMKilled): for hosts where another
	// manager owns them.
	NoCgroups bool
	// HelperBinary is the binary started as each container's supervisor
	// (it must link package supervisor, whose init runs the role, and be
	// of the same build as the agent); "" means this binary, re-executed.
	HelperBinary string
	// Version is the runtime version Version reports; "" means the main
	// module's version from the build info.
	Version string
}

// Runtime is the built-in process runtime: it runs each container as
// host processes under a supervisor of its own (see the package doc). It
// implements runtime.Service. It starts no goroutine: a running container
// costs the agent a few hundred bytes of bookkeeping, not a goroutine.
type Runtime struct {
	root        string
	logMaxSize  int64
	logMaxFiles int
	version     string
	cgroups     cgroupHost
	mountsOff   string // why containers cannot have mounts; "" when they can
	nsenter     string // path of nsenter(1), for ExecSync into a mount namespace
	helper      string // binary started as supervisor
	bootID      string // this boot of the host

	mu          sync.Mutex
	sandboxes   map[string]*sandbox
	containers  map[string]*container
	supervisors map[int]struct{} // started by this Runtime, not yet reaped
	// execs are the exec sessions and exec probes under way, by
	// container: stopped with their container (see trackExec).
	execs map[string]map[*execSession]struct{}
}

var _ kiteruntime.Service = (*Runtime)(nil)

// New opens the runtime's state under o.RootDir and finds the sandboxes
// and containers recorded there, with the processes of those still
// running.
func New(o Options) (*Runtime, error) {
	if o.RootDir == "" {
		return nil, errors.New("process runtime: Options.RootDir is required")
	}
	if o.ContainerLogMaxFiles == 1 || o.ContainerLogMaxFiles < 0 {
		return nil, fmt.Errorf("process runtime: ContainerLogMaxFiles %d: must be at least 2", o.ContainerLogMaxFiles)
	}
	root, err := filepath.Abs(o.RootDir)
	if err != nil {
		return nil, fmt.Errorf("process runtime: root dir %q: %w", o.RootDir, err)
	}
	for _, d := range []string{sandboxesDir, containersDir} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			return nil, fmt.Errorf("process runtime: %w", err)
		}
	}
	r := &Runtime{
		root:        root,
		logMaxSize:  o.ContainerLogMaxSize,
		logMaxFiles: o.ContainerLogMaxFiles,
		version:     o.Version,
		helper:      o.HelperBinary,
		sandboxes:   map[string]*sandbox{},
		containers:  map[string]*container{},
		supervisors: map[int]struct{}{},
		execs:       map[string]map[*execSession]struct{}{},
	}
	switch {
	case r.logMaxSize == 0:
		r.logMaxSize = 10 << 20
	case r.logMaxSize < 0:
		r.logMaxSize = 0
	}
	if r.logMaxFiles == 0 {
		r.logMaxFiles = 5
	}
	if r.helper == "" {
		r.helper = supervisor.SelfExe
	}
	if r.version == "" {
		r.version = moduleVersion()
	}
	switch {
	case o.NoCgroups:
		r.cgroups = cgroupHost{unavailable: "cgroups are disabled (Options.NoCgroups)"}
	default:
		r.cgroups = detectCgroups(o.CgroupName)
	}
	if r.bootID, err = supervisor.ReadBootID(); err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	r.mountsOff = mountNamespaceSupport()
	r.nsenter, _ = supervisor.LookPath("nsenter", os.Environ())
	if err := r.load(); err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	return r, nil
}

// mountNamespaceSupport says why containers cannot get a private mount
// namespace with bind mounts here, or "" if they can.
func mountNamespaceSupport() string {
	if os.Geteuid() != 0 {
		return "binding volumes in a mount namespace needs root"
	}
	if _, err := os.Stat("/proc/self/ns/mnt"); err != nil {
		return fmt.Sprintf("the kernel has no mount namespaces: %v", err)
	}
	return ""
}

// moduleVersion is the main module's version, or Kite's Kubernetes
// version for a build from a work tree (whose module version is
// "(devel)", which says nothing to a user reading the Node).
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return kiteversion.GitVersion
}

// Version implements runtime.Service.
func (r *Runtime) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0",
		RuntimeName:       RuntimeName,
		RuntimeVersion:    r.version,
		RuntimeApiVersion: "v1",
	}, nil
}

// Status implements runtime.Service: the runtime and the network (the
// host's: pods use host networking) are always ready; the extra
// conditions say whether limits and mounts work on this host.
func (r *Runtime) Status(ctx context.Context) (*runtimeapi.RuntimeStatus, error) {
	cond := func(typ string, off, reason string) *runtimeapi.RuntimeCondition {
		if off == "" {
			return &runtimeapi.RuntimeCondition{Type: typ, Status: true}
		}
		return &runtimeapi.RuntimeCondition{Type: typ, Status: false, Reason: reason, Message: off}
	}
	limits := cond(ConditionResourceLimits, r.cgroups.unavailable, ReasonNoWritableCgroup)
	if limits.Status && r.cgroups.partial != "" {
		limits.Message = "some limits are not enforced: " + r.cgroups.partial
	}
	return &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
		limits,
		cond(ConditionVolumeMounts, r.mountsOff, ReasonMountNamespacesDisabled),
	}}, nil
}

// load reads the records under the root dir. A directory without a
// readable record is one whose creation was interrupted: it is removed.
func (r *Runtime) load() error {
	entries, err := os.ReadDir(filepath.Join(r.root, sandboxesDir))
	if err != nil {
		return err
	}
	for _, e := range entries {
		dir := filepath.Join(r.root, sandboxesDir, e.Name())
		var rec sandboxRecord
		if err := supervisor.ReadRecord(dir, sandboxFile, &rec); err != nil {
			os.RemoveAll(dir)
			continue
		}
		cfg := &runtimeapi.PodSandboxConfig{}
		if err := proto.Unmarshal(rec.Config, cfg); err != nil {
			return fmt.Errorf("sandbox %s: decode config: %w", rec.ID, err)
		}
		if rec.BootID != r.bootID && !rec.Stopped {
			// The host rebooted: the sandbox's cgroup is gone, and the
			// kubelet must make a new one (a not-ready sandbox).
			rec.Stopped = true
			if err := supervisor.WriteRecord(dir, sandboxFile, rec); err != nil {
				return err
			}
		}
		r.sandboxes[rec.ID] = &sandbox{sandboxRecord: rec, config: cfg}
	}
	entries, err = os.ReadDir(filepath.Join(r.root, containersDir))
	if err != nil {
		return err
	}
	for _, e := range entries {
		dir := filepath.Join(r.root, containersDir, e.Name())
		if strings.HasPrefix(e.Name(), removingPrefix) {
			os.RemoveAll(dir)
			continue
		}
		var rec containerRecord
		var spec supervisor.ContainerSpec
		if err := supervisor.ReadRecord(dir, containerFile, &rec); err != nil {
			os.RemoveAll(dir)
			continue
		}
		if err := supervisor.ReadRecord(dir, supervisor.SpecFile, &spec); err != nil {
			os.RemoveAll(dir)
			continue
		}
		cfg := &runtimeapi.ContainerConfig{}
		if err := proto.Unmarshal(rec.Config, cfg); err != nil {
			return fmt.Errorf("container %s: decode config: %w", rec.ID, err)
		}
		var st supervisor.StartedRecord
		if supervisor.ReadRecord(dir, supervisor.StartedFile, &st) == nil && st.BootID != r.bootID && !supervisor.RecordExists(dir, supervisor.ExitFile) {
			// Started before the host rebooted: gone, whatever runs under
			// its PID with whatever start time now.
			err := supervisor.WriteRecord(dir, supervisor.ExitFile, supervisor.ExitRecord{
				ExitCode: 255, FinishedAt: time.Now().UnixNano(), Reason: "Unknown",
				Message: "the host rebooted while the container ran",
			})
			if err != nil {
				return err
			}
		}
		r.containers[rec.ID] = &container{containerRecord: rec, spec: spec, config: cfg, dir: dir}
	}
	return nil
}

// reapSupervisors collects the exit of supervisors this Runtime started
// that have ended, so they do not stay zombies while the agent runs. It
// runs on the callers' goroutines (List, Status, Stop), not in one of its
// own.
func (r *Runtime) reapSupervisors() {
	r.mu.Lock()
	pids := make([]int, 0, len(r.supervisors))
	for pid := range r.supervisors {
		pids = append(pids, pid)
	}
	r.mu.Unlock()
	for _, pid := range pids {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if got == pid || errors.Is(err, syscall.ECHILD) {
			r.mu.Lock()
			delete(r.supervisors, pid)
			r.mu.Unlock()
		}
	}
}

func newID() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func notFound(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, kiteruntime.ErrNotFound)
}
