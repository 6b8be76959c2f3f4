// Package cri is the agent's runtime over a CRI v1 runtime (containerd)
// on a unix socket: runtime.Service, runtime.ImageService and
// runtime.Streamer through k8s.io/cri-api's gRPC client stubs, as the
// kubelet's remote runtime does. It adds only what the CRI leaves to the
// kubelet below the agent's contract: the cgroup parent of each sandbox,
// the CRI's NotFound as runtime.ErrNotFound, the idempotent stop and
// remove the contract promises, and a timed-out ExecSync as
// context.DeadlineExceeded. See docs/runtime.md.
package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
)

// maxMsgSize is the kubelet's limit on CRI messages (16 MiB).
const maxMsgSize = 16 * 1024 * 1024

// CgroupDriver is how the runtime names cgroups: cgroupfs paths or systemd
// slices. It must be the runtime's own (containerd's SystemdCgroup).
type CgroupDriver string

const (
	CgroupFS      CgroupDriver = "cgroupfs"
	CgroupSystemd CgroupDriver = "systemd"
)

// Options configure a Runtime.
type Options struct {
	// Endpoint is the runtime's socket, unix:///path or /path. Required.
	Endpoint string
	// CgroupDriver names the pods' cgroups; cgroupfs when empty.
	CgroupDriver CgroupDriver
	// CgroupRoot is the cgroup (cgroupfs form, as the kubelet's
	// --cgroup-root) under which the pods' kubepods is: DefaultCgroupRoot
	// when empty. Agents sharing a host need roots of their own, else
	// they share their QoS tiers and overwrite each other's shares.
	CgroupRoot string
	// ConnectTimeout bounds the first Version call, which checks that the
	// runtime answers (10 s when zero).
	ConnectTimeout time.Duration
	// PodPidsLimit is the pods' cgroups' pids.max (--pod-max-pids), as the
	// kubelet's pod container manager sets it; 0 or less leaves it
	// unlimited.
	PodPidsLimit int64
	// PodNetwork says that the runtime gives sandboxes outside the node's
	// network their own (a CNI configuration of the agent's): its
	// NetworkReady is then the node's, as the kubelet takes it. Without
	// it every sandbox is in the node's network.
	PodNetwork bool
	// MaxParallelStarts bounds the start calls (RunPodSandbox,
	// CreateContainer, StartContainer) in the runtime at once
	// (startgate.go): DefaultMaxParallelStarts when zero, no bound when
	// negative.
	MaxParallelStarts int
	// DialOptions are added to the connection's (a test observes the
	// calls as they reach the runtime with an interceptor).
	DialOptions []grpc.DialOption
}

// Runtime talks to a CRI runtime. It is safe for concurrent use.
type Runtime struct {
	opts   Options
	conn   *grpc.ClientConn
	rs     runtimeapi.RuntimeServiceClient
	is     runtimeapi.ImageServiceClient
	driver CgroupDriver
	root   []string   // the cgroup root's components (Options.CgroupRoot)
	starts *startGate // bounds the start calls in the runtime at once

	contentMu sync.Mutex
	content   string // ContentStore's answer, once known

	// qosMu serialises the writes of the QoS tiers (UpdateQOSCgroups).
	qosMu sync.Mutex
}

var (
	_ runtime.Service      = (*Runtime)(nil)
	_ runtime.ImageService = (*Runtime)(nil)
	_ runtime.Streamer     = (*Runtime)(nil)
)

// New connects to the runtime at opts.Endpoint and checks that it speaks
// CRI v1.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	if opts.Endpoint == "" {
		return nil, errors.New("cri: no runtime endpoint given")
	}
	driver := opts.CgroupDriver
	if driver == "" {
		driver = CgroupFS
	}
	if err := ValidateCgroupRoot(opts.CgroupRoot); err != nil {
		return nil, fmt.Errorf("cri: %w", err)
	}
	root := rootComponents(opts.CgroupRoot)
	if err := validateRootForDriver(driver, root); err != nil {
		return nil, fmt.Errorf("cri: %w", err)
	}
	target := opts.Endpoint
	if !strings.HasPrefix(target, "unix://") {
		if strings.Contains(target, "://") {
			return nil, fmt.Errorf("cri: endpoint %q: only unix sockets are supported", target)
		}
		target = "unix://" + target
	}
	dial := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize))}, opts.DialOptions...)
	conn, err := grpc.NewClient(target, dial...)
	if err != nil {
		return nil, fmt.Errorf("cri: endpoint %q: %w", opts.Endpoint, err)
	}
	r := &Runtime{opts: opts, conn: conn, rs: runtimeapi.NewRuntimeServiceClient(conn), is: runtimeapi.NewImageServiceClient(conn), driver: driver, root: root}
	n := opts.MaxParallelStarts
	if n == 0 {
		n = DefaultMaxParallelStarts()
	}
	r.starts = newStartGate(n)
	timeout := opts.ConnectTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	vctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A containerd that has just started answers "server is not
	// initialized yet" while its CRI plugin recovers its state: ask again.
	for {
		_, err := r.rs.Version(vctx, &runtimeapi.VersionRequest{}, grpc.WaitForReady(true))
		if err == nil {
			return r, nil
		}
		if !strings.Contains(err.Error(), "not initialized") || vctx.Err() != nil {
			conn.Close()
			return nil, fmt.Errorf("cri: runtime at %q does not answer CRI v1: %w", opts.Endpoint, err)
		}
		select {
		case <-vctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close closes the connection.
func (r *Runtime) Close() error { return r.conn.Close() }

// Endpoint is the socket the runtime was reached at.
func (r *Runtime) Endpoint() string { return r.opts.Endpoint }

// wrap names the call and the object, and turns the CRI's NotFound into
// runtime.ErrNotFound.
func wrap(err error, call, id string) error {
	if err == nil {
		return nil
	}
	if status.Code(err) == codes.NotFound {
		return fmt.Errorf("cri: %s %s: %w: %w", call, id, runtime.ErrNotFound, err)
	}
	return fmt.Errorf("cri: %s %s: %w", call, id, err)
}

// notFound says whether err is the CRI's NotFound.
func notFound(err error) bool { return status.Code(err) == codes.NotFound }

func (r *Runtime) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	v, err := r.rs.Version(ctx, &runtimeapi.VersionRequest{})
	return v, wrap(err, "Version", "")
}

// Status is the runtime's, but NetworkReady without PodNetwork: every
// sandbox the agent runs then uses the node's network namespace, so a
// runtime without a CNI configuration runs them all the same; its reason
// is kept in the message.
func (r *Runtime) Status(ctx context.Context) (*runtimeapi.RuntimeStatus, error) {
	s, err := r.rs.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return nil, wrap(err, "Status", "")
	}
	st := s.GetStatus()
	if r.opts.PodNetwork {
		return st, nil
	}
	for _, c := range st.GetConditions() {
		if c.Type == runtimeapi.NetworkReady && !c.Status {
			c.Message = "every pod uses the node's network; the runtime's own network is not used (" + c.Reason + ": " + c.Message + ")"
			c.Status, c.Reason = true, "NodeNetwork"
		}
	}
	return st, nil
}

// RunPodSandbox passes runtimeHandler on as the request's runtime_handler,
// as the kubelet does: the runtime (containerd's CRI plugin) picks the
// runtime of that name from its configuration and refuses one it has not.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	if config.Linux == nil {
		config.Linux = &runtimeapi.LinuxPodSandboxConfig{}
	}
	if config.Linux.CgroupParent == "" {
		// The agent names it by the pod's class (PodCgroupParent); a
		// caller that does not gets the Burstable tier, the kubelet's
		// for a pod neither Guaranteed nor BestEffort.
		config.Linux.CgroupParent = r.PodCgroupParent(config.GetMetadata().GetUid(), qosBurstable)
	}
	done, err := r.starts.enter(ctx, startSandbox)
	if err != nil {
		return "", wrap(err, "RunPodSandbox", config.GetMetadata().GetNamespace()+"/"+config.GetMetadata().GetName())
	}
	resp, err := r.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
	done()
	if err != nil {
		return "", wrap(err, "RunPodSandbox", config.GetMetadata().GetNamespace()+"/"+config.GetMetadata().GetName())
	}
	return resp.PodSandboxId, nil
}

// StopPodSandbox of a sandbox the runtime does not know succeeds, as the
// contract asks.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	_, err := r.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	if notFound(err) {
		return nil
	}
	return wrap(err, "StopPodSandbox", id)
}

// RemovePodSandbox removes the sandbox and then the pod's cgroup parent,
// which runc created for it and leaves (the kubelet removes its pod
// cgroups itself); a cgroup still in use stays. The pod's class is not
// known here, nor whether an older agent made its cgroup: every place it
// may be is tried (a missing one costs a failed rmdir).
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	var uid string
	if st, err := r.PodSandboxStatus(ctx, id); err == nil {
		uid = st.GetMetadata().GetUid()
	}
	_, err := r.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	if notFound(err) {
		return nil
	}
	if err != nil {
		return wrap(err, "RemovePodSandbox", id)
	}
	if uid != "" && r.driver == CgroupFS {
		if others, err := r.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{runtime.LabelPodUID: uid}}); err == nil && len(others) == 0 {
			for _, parent := range podCgroupCandidates(r.driver, r.root, uid) {
				removeCgroup(parent)
			}
		}
	}
	return nil
}

// removeCgroup removes a cgroupfs path in every hierarchy (v1) or the
// unified one (v2); one that is not there or not empty is left.
func removeCgroup(path string) {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", path))
	for _, d := range append(dirs, filepath.Join("/sys/fs/cgroup", path)) {
		os.Remove(d)
	}
}

func (r *Runtime) PodSandboxStatus(ctx context.Context, id string) (*runtimeapi.PodSandboxStatus, error) {
	resp, err := r.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return nil, wrap(err, "PodSandboxStatus", id)
	}
	return resp.Status, nil
}

func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	resp, err := r.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, wrap(err, "ListPodSandbox", "")
	}
	return resp.Items, nil
}

// CreateContainer puts the container in its pod's cgroup as the runtime
// has it: the CRI runtime takes the container's cgroup parent from the
// sandbox config of this call, not from the sandbox, and a pod adopted
// from an older agent's layout (podCgroupOf) has its cgroup elsewhere
// than its class's tier.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	if given := sandboxConfig.GetLinux().GetCgroupParent(); sandboxConfig != nil {
		if have := r.podCgroupOf(sandboxConfig.GetMetadata().GetUid(), given); have != given {
			sandboxConfig = proto.Clone(sandboxConfig).(*runtimeapi.PodSandboxConfig)
			if sandboxConfig.Linux == nil {
				sandboxConfig.Linux = &runtimeapi.LinuxPodSandboxConfig{}
			}
			sandboxConfig.Linux.CgroupParent = have
		}
	}
	done, err := r.starts.enter(ctx, startContainer)
	if err != nil {
		return "", wrap(err, "CreateContainer", config.GetMetadata().GetName())
	}
	resp, err := r.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandboxID, Config: config, SandboxConfig: sandboxConfig})
	done()
	if err != nil {
		return "", wrap(err, "CreateContainer", config.GetMetadata().GetName())
	}
	return resp.ContainerId, nil
}

func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	done, err := r.starts.enter(ctx, startContainer)
	if err != nil {
		return wrap(err, "StartContainer", id)
	}
	_, err = r.rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	done()
	return wrap(err, "StartContainer", id)
}

// StopContainer gives the runtime the timeout plus a margin, as the
// kubelet's remote client does, so that the call ends after the kill.
func (r *Runtime) StopContainer(ctx context.Context, id string, timeout int64) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(timeout)*time.Second+2*time.Minute)
		defer cancel()
	}
	_, err := r.rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
	return wrap(err, "StopContainer", id)
}

func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	_, err := r.rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	if notFound(err) {
		return nil
	}
	return wrap(err, "RemoveContainer", id)
}

func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	resp, err := r.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, wrap(err, "ListContainers", "")
	}
	return resp.Containers, nil
}

func (r *Runtime) ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatus, error) {
	resp, err := r.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return nil, wrap(err, "ContainerStatus", id)
	}
	return resp.Status, nil
}

// ExecSync runs cmd in the container. The runtime bounds it by timeout
// (whole seconds, at least 1 when set); a command that outlives it is
// context.DeadlineExceeded, as the exec prober expects.
func (r *Runtime) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (runtime.ExecResult, error) {
	secs := int64(0)
	if timeout > 0 {
		secs = max(int64((timeout+time.Second-1)/time.Second), 1)
		var cancel context.CancelFunc
		// The runtime's own timeout comes first; this one only keeps a
		// stuck runtime from holding the caller.
		ctx, cancel = context.WithTimeout(ctx, time.Duration(secs)*time.Second+10*time.Second)
		defer cancel()
	}
	resp, err := r.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: secs})
	if err != nil {
		if timeout > 0 && (status.Code(err) == codes.DeadlineExceeded || strings.Contains(err.Error(), "deadline exceeded") || strings.Contains(err.Error(), "timeout")) {
			return runtime.ExecResult{}, fmt.Errorf("cri: ExecSync %s %q: command timed out after %s: %w", id, cmd, timeout, context.DeadlineExceeded)
		}
		return runtime.ExecResult{}, wrap(err, "ExecSync", id)
	}
	return runtime.ExecResult{Stdout: resp.Stdout, Stderr: resp.Stderr, ExitCode: resp.ExitCode}, nil
}

// Exec, Attach and PortForward return the URL of the runtime's streaming
// server for the session.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (string, error) {
	resp, err := r.rs.Exec(ctx, req)
	if err != nil {
		return "", wrap(err, "Exec", req.ContainerId)
	}
	return resp.Url, nil
}

func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (string, error) {
	resp, err := r.rs.Attach(ctx, req)
	if err != nil {
		return "", wrap(err, "Attach", req.ContainerId)
	}
	return resp.Url, nil
}

func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (string, error) {
	resp, err := r.rs.PortForward(ctx, req)
	if err != nil {
		return "", wrap(err, "PortForward", req.PodSandboxId)
	}
	return resp.Url, nil
}

func (r *Runtime) ImageStatus(ctx context.Context, image string) (*runtimeapi.Image, error) {
	resp, err := r.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		return nil, wrap(err, "ImageStatus", image)
	}
	return resp.Image, nil
}

// PullImage returns the runtime's error as it is, as the kubelet's
// remote image service does: its text is the ErrImagePull message and the
// Failed event's, word for word as on a kubelet's node.
func (r *Runtime) PullImage(ctx context.Context, image string, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	resp, err := r.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}, Auth: auth, SandboxConfig: sandboxConfig})
	if err != nil {
		return "", err
	}
	return resp.ImageRef, nil
}

func (r *Runtime) ListImages(ctx context.Context) ([]*runtimeapi.Image, error) {
	resp, err := r.is.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return nil, wrap(err, "ListImages", "")
	}
	return resp.Images, nil
}

// RemoveImage removes an image (by ID or name); one the runtime does not
// have is removed already, as the CRI says.
func (r *Runtime) RemoveImage(ctx context.Context, image string) error {
	_, err := r.is.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if notFound(err) {
		return nil
	}
	return wrap(err, "RemoveImage", image)
}

// ImageFsInfo is the runtime's use of the file systems holding its images.
func (r *Runtime) ImageFsInfo(ctx context.Context) ([]*runtimeapi.FilesystemUsage, error) {
	resp, err := r.is.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, wrap(err, "ImageFsInfo", "")
	}
	return resp.ImageFilesystems, nil
}

// ContentStore is the directory of the runtime's content store (the
// blobs of its images' manifests, configurations and layers), which the
// agent reads image volumes from (agent/volumes, image.go): containerd's
// <root>/io.containerd.content.v1.content, its root as its CRI plugin
// reports it in the verbose Status (config.containerdRootDir). It is
// asked once and kept.
func (r *Runtime) ContentStore(ctx context.Context) (string, error) {
	// The lock guards the cached answer only, not the call: two first
	// callers may both ask, and get the same answer.
	r.contentMu.Lock()
	known := r.content
	r.contentMu.Unlock()
	if known != "" {
		return known, nil
	}
	s, err := r.rs.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		return "", wrap(err, "Status", "")
	}
	dir, err := ContentStoreOf(s.GetInfo())
	if err != nil {
		return "", fmt.Errorf("cri: runtime at %q: %w", r.opts.Endpoint, err)
	}
	r.contentMu.Lock()
	r.content = dir
	r.contentMu.Unlock()
	return dir, nil
}

// ContentStoreOf is the content store's directory by a verbose CRI
// Status's info: containerd's config.containerdRootDir.
func ContentStoreOf(info map[string]string) (string, error) {
	var cfg struct {
		ContainerdRootDir string `json:"containerdRootDir"`
	}
	raw, ok := info["config"]
	if !ok {
		return "", errors.New("its verbose status has no config: not containerd's CRI plugin, whose content store image volumes are read from")
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return "", fmt.Errorf("its verbose status' config: %w", err)
	}
	if cfg.ContainerdRootDir == "" || !filepath.IsAbs(cfg.ContainerdRootDir) {
		return "", fmt.Errorf("its verbose status' config has no containerd root directory (%q)", cfg.ContainerdRootDir)
	}
	return filepath.Join(cfg.ContainerdRootDir, "io.containerd.content.v1.content"), nil
}
