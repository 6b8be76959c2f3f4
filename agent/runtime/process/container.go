package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// startTimeout bounds how long StartContainer waits for a supervisor to
// say that the command runs, when the caller's context has no deadline.
const startTimeout = 30 * time.Second

// container is one container's records. The started and exit records are
// cached once read (they never change); fields below dir are guarded by
// Runtime.mu.
type container struct {
	containerRecord
	spec   containerSpec
	config *runtimeapi.ContainerConfig
	dir    string

	starting bool
	started  *startedRecord
	exit     *exitRecord
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
		spec.Cgroup = s.Cgroup.child("ctr-" + id)
	}
	undo := func() {
		os.RemoveAll(dir)
		spec.Cgroup.remove()
	}
	if err := spec.Cgroup.create(config.GetLinux().GetResources(), false); err != nil {
		undo()
		return "", fmt.Errorf("create container %s: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		undo()
		return "", fmt.Errorf("create container %s: %w", name, err)
	}
	// spec.json before container.json: a directory without container.json
	// is an unfinished create, which load removes.
	if err := writeRecord(dir, specFile, spec); err != nil {
		undo()
		return "", fmt.Errorf("create container %s: %w", name, err)
	}
	if err := writeRecord(dir, containerFile, rec); err != nil {
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
func (r *Runtime) containerSpec(config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig, s *sandbox) (containerSpec, error) {
	if len(config.Command) == 0 {
		return containerSpec{}, fmt.Errorf("%w: the process runtime runs a container's command on the host and cannot take it from image %q", ErrNoCommand, config.GetImage().GetImage())
	}
	if config.Tty || config.Stdin {
		return containerSpec{}, errors.New("the process runtime has no stdin or tty for containers")
	}
	logDir := sandboxConfig.GetLogDirectory()
	if logDir == "" {
		logDir = s.config.GetLogDirectory()
	}
	if config.LogPath == "" || logDir == "" {
		return containerSpec{}, errors.New("no log path: the sandbox's log directory and the container's log path are both required")
	}
	logPath := filepath.Join(logDir, config.LogPath)
	if !filepath.IsAbs(logPath) {
		return containerSpec{}, fmt.Errorf("log path %q is not absolute", logPath)
	}
	spec := containerSpec{
		Args:        append(append([]string{}, config.Command...), config.Args...),
		WorkingDir:  config.WorkingDir,
		LogPath:     logPath,
		LogMaxSize:  r.logMaxSize,
		LogMaxFiles: r.logMaxFiles,
	}
	hasPath := false
	for _, kv := range config.Envs {
		if kv.Key == "" || strings.Contains(kv.Key, "=") {
			return containerSpec{}, fmt.Errorf("environment variable name %q is invalid", kv.Key)
		}
		spec.Env = append(spec.Env, kv.Key+"="+string(kv.Value))
		hasPath = hasPath || kv.Key == "PATH"
	}
	if !hasPath {
		spec.Env = append(spec.Env, "PATH="+defaultPath)
	}
	user, err := resolveUser(config.GetLinux().GetSecurityContext())
	if err != nil {
		return containerSpec{}, err
	}
	spec.User = user
	if len(config.Mounts) > 0 && r.mountsOff != "" {
		return containerSpec{}, fmt.Errorf("%w: %s", ErrMountsUnsupported, r.mountsOff)
	}
	for _, m := range config.Mounts {
		if !filepath.IsAbs(m.ContainerPath) || !filepath.IsAbs(m.HostPath) {
			return containerSpec{}, fmt.Errorf("mount %q at %q: both paths must be absolute", m.HostPath, m.ContainerPath)
		}
		if _, err := os.Stat(m.HostPath); err != nil {
			return containerSpec{}, fmt.Errorf("mount %q at %q: %w", m.HostPath, m.ContainerPath, err)
		}
		spec.Mounts = append(spec.Mounts, mountSpec{Source: m.HostPath, Target: filepath.Clean(m.ContainerPath), ReadOnly: m.Readonly})
	}
	return spec, nil
}

// StartContainer implements runtime.Service: it starts the container's
// supervisor and returns once the command runs, or with why it could not
// (the container is then exited with reason StartError, as containerd
// records it).
func (r *Runtime) StartContainer(ctx context.Context, containerID string) error {
	r.mu.Lock()
	c := r.containers[containerID]
	switch {
	case c == nil:
		r.mu.Unlock()
		return fmt.Errorf("start container: %w", notFound("container", containerID))
	case c.starting || c.started != nil || c.exit != nil:
		r.mu.Unlock()
		return fmt.Errorf("start container %s: already started", containerID)
	}
	c.starting = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		c.starting = false
		r.mu.Unlock()
	}()
	if recordExists(c.dir, startedFile) || recordExists(c.dir, exitFile) {
		return fmt.Errorf("start container %s: already started", containerID)
	}
	if err := r.startSupervisor(ctx, c); err != nil {
		return fmt.Errorf("start container %s (%s): %w", c.config.Metadata.Name, containerID, err)
	}
	r.observe(c)
	return nil
}

func (r *Runtime) startSupervisor(ctx context.Context, c *container) error {
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devNull.Close()
	logFile, err := os.OpenFile(filepath.Join(c.dir, supervisorLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer reportR.Close()
	proc, err := os.StartProcess(r.helper, []string{"kite-supervisor", c.dir}, &os.ProcAttr{
		Dir:   "/",
		Env:   []string{roleEnv + "=" + roleSupervisor, "GOMAXPROCS=1"},
		Files: []*os.File{devNull, logFile, logFile, reportW},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	reportW.Close()
	if err != nil {
		return fmt.Errorf("start supervisor: %w", err)
	}
	r.mu.Lock()
	r.supervisors[proc.Pid] = struct{}{}
	r.mu.Unlock()
	// Reaped by reapSupervisors with wait4, not by a goroutine per
	// container waiting on it.
	proc.Release()

	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(startTimeout)
	}
	reportR.SetReadDeadline(deadline)
	line, err := bufio.NewReader(reportR).ReadString('\n')
	line = strings.TrimSpace(line)
	switch {
	case line == "ok":
		return nil
	case strings.HasPrefix(line, "error: "):
		return errors.New(strings.TrimPrefix(line, "error: "))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("the supervisor did not report within %s", time.Until(deadline).Round(time.Second))
	default:
		tail, _ := os.ReadFile(filepath.Join(c.dir, supervisorLog))
		return fmt.Errorf("the supervisor ended without a report (%v): %s", err, lastLine(tail))
	}
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// observe returns what is known of c's process: its start record (nil if
// it never started) and its exit record (nil while it runs). A container
// whose process and supervisor are both gone without an exit record (the
// host rebooted, someone killed the supervisor) gets one with reason
// Unknown, so that it reads as exited from then on; a process under a
// reused PID is not taken for it, since aliveness checks the start time.
func (r *Runtime) observe(c *container) (*startedRecord, *exitRecord) {
	r.mu.Lock()
	st, ex := c.started, c.exit
	r.mu.Unlock()
	if ex != nil {
		return st, ex
	}
	if st == nil {
		var s startedRecord
		if readRecord(c.dir, startedFile, &s) == nil {
			st = &s
		}
	}
	var e exitRecord
	if readRecord(c.dir, exitFile, &e) == nil {
		ex = &e
	} else if st != nil && !st.Process.alive() && !st.Supervisor.alive() {
		if readRecord(c.dir, exitFile, &e) == nil { // written as the supervisor exited
			ex = &e
		} else {
			ex = &exitRecord{
				ExitCode: 255, FinishedAt: time.Now().UnixNano(), Reason: "Unknown",
				Message: "the container's process and its supervisor are gone and left no exit record",
			}
			if err := writeRecord(c.dir, exitFile, *ex); err != nil {
				fmt.Fprintf(os.Stderr, "process runtime: %v\n", err)
			}
		}
	}
	r.mu.Lock()
	c.started, c.exit = st, ex
	r.mu.Unlock()
	return st, ex
}

func containerState(st *startedRecord, ex *exitRecord) runtimeapi.ContainerState {
	switch {
	case ex != nil:
		return runtimeapi.ContainerState_CONTAINER_EXITED
	case st != nil:
		return runtimeapi.ContainerState_CONTAINER_RUNNING
	default:
		return runtimeapi.ContainerState_CONTAINER_CREATED
	}
}

// StopContainer implements runtime.Service: SIGTERM to the container's
// process group, SIGKILL to the group and its cgroup once timeout seconds
// have passed (at once for 0), and it returns when none of its processes
// is left. The group is signalled only while its leader is the process
// recorded at start (same PID and start time; see signalGroup).
func (r *Runtime) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	c, err := r.container(containerID)
	if err != nil {
		return fmt.Errorf("stop container: %w", err)
	}
	defer r.reapSupervisors()
	if err := r.waitStarted(ctx, c); err != nil {
		return err
	}
	st, ex := r.observe(c)
	if st == nil || ex != nil {
		return nil
	}
	if timeout > 0 && signalGroup(st.Process, syscall.SIGTERM) {
		done, err := r.waitGone(ctx, c, time.Now().Add(time.Duration(timeout)*time.Second))
		if done || err != nil {
			return err
		}
	}
	signalGroup(st.Process, syscall.SIGKILL)
	c.spec.Cgroup.kill()
	_, err = r.waitGone(ctx, c, time.Time{})
	return err
}

// waitStarted waits while a StartContainer of c is under way, so that a
// stop racing a start stops what the start started.
func (r *Runtime) waitStarted(ctx context.Context, c *container) error {
	for {
		r.mu.Lock()
		starting := c.starting
		r.mu.Unlock()
		if !starting {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop container %s while it starts: %w", c.ID, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitGone polls until c has an exit record and no process left in its
// cgroup, until deadline (zero: none) or ctx ends.
func (r *Runtime) waitGone(ctx context.Context, c *container, deadline time.Time) (bool, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, ex := r.observe(c); ex != nil && !c.spec.Cgroup.populated() {
			return true, nil
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("stop container %s: %w", c.ID, ctx.Err())
		case <-tick.C:
		}
	}
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
	if err := c.spec.Cgroup.remove(); err != nil {
		return fmt.Errorf("remove container %s: %w", containerID, err)
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remove container %s: %w", containerID, err)
	}
	r.mu.Lock()
	delete(r.containers, containerID)
	r.mu.Unlock()
	return nil
}

// ListContainers implements runtime.Service.
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.reapSupervisors()
	r.mu.Lock()
	cs := make([]*container, 0, len(r.containers))
	for _, c := range r.containers {
		if filter != nil {
			if filter.Id != "" && filter.Id != c.ID ||
				filter.PodSandboxId != "" && filter.PodSandboxId != c.SandboxID ||
				!labelsMatch(filter.LabelSelector, c.config.Labels) {
				continue
			}
		}
		cs = append(cs, c)
	}
	r.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range cs {
		state := containerState(r.observe(c))
		if filter != nil && filter.State != nil && filter.State.State != state {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id: c.ID, PodSandboxId: c.SandboxID, Metadata: c.config.Metadata,
			Image: c.config.Image, ImageRef: c.config.GetImage().GetImage(),
			State: state, CreatedAt: c.CreatedAt,
			Labels: c.config.Labels, Annotations: c.config.Annotations,
		})
	}
	return out, nil
}

// ContainerStatus implements runtime.Service.
func (r *Runtime) ContainerStatus(ctx context.Context, containerID string) (*runtimeapi.ContainerStatus, error) {
	r.reapSupervisors()
	c, err := r.container(containerID)
	if err != nil {
		return nil, fmt.Errorf("container status: %w", err)
	}
	st, ex := r.observe(c)
	s := &runtimeapi.ContainerStatus{
		Id: c.ID, Metadata: c.config.Metadata, State: containerState(st, ex),
		CreatedAt: c.CreatedAt,
		Image:     c.config.Image, ImageRef: c.config.GetImage().GetImage(),
		Labels: c.config.Labels, Annotations: c.config.Annotations,
		Mounts: c.config.Mounts, LogPath: c.spec.LogPath,
		Resources: &runtimeapi.ContainerResources{Linux: c.config.GetLinux().GetResources()},
	}
	if st != nil {
		s.StartedAt = st.StartedAt
	}
	if ex != nil {
		s.FinishedAt, s.ExitCode, s.Reason, s.Message = ex.FinishedAt, ex.ExitCode, ex.Reason, ex.Message
	}
	return s, nil
}
