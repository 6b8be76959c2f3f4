package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kiteruntime "github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

// container is one container's records. The started and exit records are
// cached once read (they never change); fields below dir are guarded by
// Runtime.mu.
type container struct {
	containerRecord
	spec   supervisor.ContainerSpec
	config *runtimeapi.ContainerConfig
	dir    string

	starting bool
	started  *supervisor.StartedRecord
	exit     *supervisor.ExitRecord
}

func (r *Runtime) containersOf(sandboxID string) []*container {
	r.mu.Lock()
	defer r.mu.Unlock()
	var cs []*container
	for _, c := range r.containers {
		if c.SandboxID == sandboxID {
			cs = append(cs, c)
		}
	}
	return cs
}

func (r *Runtime) container(id string) (*container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.containers[id]
	if c == nil {
		return nil, notFound("container", id)
	}
	return c, nil
}

// CreateContainer implements runtime.Service. The container's command
// must be given (the runtime runs it on the host and cannot take it from
// the image, which it only records); mounts need a host where the runtime
// can bind them (see Status).
func (r *Runtime) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	name := config.GetMetadata().GetName()
	if name == "" {
		return "", errors.New("create container: config has no metadata name")
	}
	r.mu.Lock()
	s := r.sandboxes[podSandboxID]
	r.mu.Unlock()
	if s == nil {
		return "", fmt.Errorf("create container %s: %w", name, notFound("pod sandbox", podSandboxID))
	}
	if s.Stopped {
		return "", fmt.Errorf("create container %s: pod sandbox %s is not ready", name, podSandboxID)
	}
	spec, err := r.containerSpec(config, sandboxConfig, s)
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", name, err)
	}
	cfg, err := proto.Marshal(config)
	if err != nil {
		return "", fmt.Errorf("create container %s: encode config: %w", name, err)
	}
	id := newID()
	spec.ID = id
	dir := filepath.Join(r.root, containersDir, id)
	rec := containerRecord{ID: id, SandboxID: podSandboxID, CreatedAt: time.Now().UnixNano(), Config: cfg}
	if s.Cgroup.Unified != "" || s.Cgroup.Memory != "" || s.Cgroup.CPU != "" || s.Cgroup.Pids != "" {
		spec.Cgroup = s.Cgroup.Child("ctr-" + id)
	}
	undo := func() {
		os.RemoveAll(dir)
		spec.Cgroup.Remove()
	}
	if err := createCgroup(spec.Cgroup, config.GetLinux().GetResources(), false); err != nil {
		undo()
		return "", fmt.Errorf("create container %s: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		undo()
		return "", fmt.Errorf("create container %s: %w", name, err)
	}
	// spec.json before container.json: a directory without container.json
	// is an unfinished create, which load removes.
	if err := supervisor.WriteRecord(dir, supervisor.SpecFile, spec); err != nil {
		undo()
		return "", fmt.Errorf("create container %s: %w", name, err)
	}
	if err := supervisor.WriteRecord(dir, containerFile, rec); err != nil {
		undo()
		return "", fmt.Errorf("create container %s: %w", name, err)
	}
	r.mu.Lock()
	r.containers[id] = &container{containerRecord: rec, spec: spec, config: proto.Clone(config).(*runtimeapi.ContainerConfig), dir: dir}
	r.mu.Unlock()
	return id, nil
}

// containerSpec turns a CRI config into what the supervisor and init
// carry out, refusing what this runtime cannot do.
func (r *Runtime) containerSpec(config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig, s *sandbox) (supervisor.ContainerSpec, error) {
	if len(config.Command) == 0 {
		return supervisor.ContainerSpec{}, fmt.Errorf("%w: the process runtime runs a container's command on the host and cannot take it from image %q", ErrNoCommand, config.GetImage().GetImage())
	}
	logDir := sandboxConfig.GetLogDirectory()
	if logDir == "" {
		logDir = s.config.GetLogDirectory()
	}
	if config.LogPath == "" || logDir == "" {
		return supervisor.ContainerSpec{}, errors.New("no log path: the sandbox's log directory and the container's log path are both required")
	}
	logPath := filepath.Join(logDir, config.LogPath)
	if !filepath.IsAbs(logPath) {
		return supervisor.ContainerSpec{}, fmt.Errorf("log path %q is not absolute", logPath)
	}
	spec := supervisor.ContainerSpec{
		Args:        append(append([]string{}, config.Command...), config.Args...),
		WorkingDir:  config.WorkingDir,
		LogPath:     logPath,
		LogMaxSize:  r.logMaxSize,
		LogMaxFiles: r.logMaxFiles,
		Stdin:       config.Stdin,
		StdinOnce:   config.Stdin && config.StdinOnce,
		TTY:         config.Tty,
	}
	hasPath, hasTerm := false, false
	for _, kv := range config.Envs {
		if kv.Key == "" || strings.Contains(kv.Key, "=") {
			return supervisor.ContainerSpec{}, fmt.Errorf("environment variable name %q is invalid", kv.Key)
		}
		spec.Env = append(spec.Env, kv.Key+"="+string(kv.Value))
		hasPath = hasPath || kv.Key == "PATH"
		hasTerm = hasTerm || kv.Key == "TERM"
	}
	if !hasPath {
		spec.Env = append(spec.Env, "PATH="+supervisor.DefaultPath)
	}
	if spec.TTY && !hasTerm {
		spec.Env = append(spec.Env, "TERM=xterm") // as containerd's WithTTY
	}
	user, err := resolveUser(config.GetLinux().GetSecurityContext())
	if err != nil {
		return supervisor.ContainerSpec{}, err
	}
	spec.User = user
	if res := config.GetLinux().GetResources(); res != nil && res.OomScoreAdj != 0 {
		if res.OomScoreAdj < -1000 || res.OomScoreAdj > 1000 {
			return supervisor.ContainerSpec{}, fmt.Errorf("oom_score_adj %d: not in [-1000, 1000]", res.OomScoreAdj)
		}
		adj := res.OomScoreAdj
		spec.OOMScoreAdj = &adj
	}
	mounts := config.Mounts
	if r.mountsOff != "" {
		// Without mounts the termination-message file is left out, not
		// the container: its message then comes from the log or is empty.
		mounts = slices.DeleteFunc(slices.Clone(mounts), func(m *runtimeapi.Mount) bool {
			return m.ContainerPath == config.Annotations[kiteruntime.AnnotationTerminationMessagePath]
		})
	}
	if len(mounts) > 0 && r.mountsOff != "" {
		return supervisor.ContainerSpec{}, fmt.Errorf("%w: %s", ErrMountsUnsupported, r.mountsOff)
	}
	for _, m := range mounts {
		if !filepath.IsAbs(m.ContainerPath) || !filepath.IsAbs(m.HostPath) {
			return supervisor.ContainerSpec{}, fmt.Errorf("mount %q at %q: both paths must be absolute", m.HostPath, m.ContainerPath)
		}
		if _, err := os.Stat(m.HostPath); err != nil {
			return supervisor.ContainerSpec{}, fmt.Errorf("mount %q at %q: %w", m.HostPath, m.ContainerPath, err)
		}
		spec.Mounts = append(spec.Mounts, supervisor.Mount{Source: m.HostPath, Target: filepath.Clean(m.ContainerPath), ReadOnly: m.Readonly})
	}
	return spec, nil
}

// RemoveContainer implements runtime.Service: it kills the container if
// it runs and removes its cgroup and records (not its log, which is the
// kubelet's). An unknown container is not an error.
func (r *Runtime) RemoveContainer(ctx context.Context, containerID string) error {
	r.mu.Lock()
	c := r.containers[containerID]
	r.mu.Unlock()
	if c == nil {
		return nil
	}
	if err := r.StopContainer(ctx, containerID, 0); err != nil {
		return fmt.Errorf("remove container %s: %w", containerID, err)
	}
	if err := c.spec.Cgroup.Remove(); err != nil {
		return fmt.Errorf("remove container %s: %w", containerID, err)
	}
	// Renamed away first, in one step, so that nothing writing a record
	// into the directory meanwhile (a status call recording an Unknown
	// exit) can refill it while it is being deleted.
	gone := filepath.Join(filepath.Dir(c.dir), removingPrefix+containerID)
	if err := os.Rename(c.dir, gone); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove container %s: %w", containerID, err)
	}
	r.mu.Lock()
	delete(r.containers, containerID)
	r.mu.Unlock()
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("remove container %s: %w", containerID, err)
	}
	return nil
}
