// Package runtime is the agent's contract with a container runtime: the
// subset of the CRI RuntimeService (k8s.io/cri-api) that the agent uses,
// with the CRI's own message types, so that the built-in process runtime
// (package process) and a CRI runtime over a socket are two
// implementations of one interface.
//
// The split is the kubelet's: the agent decides (what to start, kill or
// restart, the environment with its references resolved, the volumes
// materialised on the host, the log path, the resources) and hands the
// runtime a complete PodSandboxConfig or ContainerConfig; the runtime only
// carries them out and reports what it observes. See docs/agent.md.
package runtime

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Service is a container runtime. Methods are safe for concurrent use.
// Errors for IDs the runtime does not know wrap ErrNotFound.
//
// Semantics are the CRI's (cri-api api.proto):
//   - RunPodSandbox creates and starts a pod's sandbox (for the process
//     runtime: the pod's cgroup; each container gets its own mount
//     namespace) and returns its ID. runtimeHandler is the CRI's
//     runtime_handler, the handler of the pod's RuntimeClass ("" for the
//     runtime's default); a runtime refuses a handler it does not have;
//     StopPodSandbox force-stops every container of it; RemovePodSandbox
//     removes it and its containers. Stop and Remove of an unknown or
//     already stopped sandbox succeed.
//   - CreateContainer prepares a container in a sandbox (config.LogPath is
//     relative to sandboxConfig.LogDirectory); StartContainer starts it.
//   - StopContainer sends the stop signal (SIGTERM) to every process of
//     the container and force-kills them after timeout seconds; it returns
//     once none is left. Stopping a stopped (or never started) container
//     succeeds. RemoveContainer force-stops and removes a container (not
//     its log, which is the agent's); removing one the runtime does not
//     know succeeds, as the CRI's idempotent remove does.
//   - A failed StartContainer leaves the container exited, with reason
//     StartError and exit code 128, as containerd records it.
//   - ListContainers and ListPodSandbox filter by ID, state and labels, as
//     the CRI filters do; a nil filter lists everything.
//   - ExecSync runs cmd in the container's environment and returns its
//     output and exit code; a command that cannot start is an error, a
//     non-zero exit is not. The timeout bounds the command; 0 means none.
//     A command that outlives it is killed, and the error wraps
//     context.DeadlineExceeded (exec probes report that as a timeout).
type Service interface {
	Version(ctx context.Context) (*runtimeapi.VersionResponse, error)
	// Status reports RuntimeReady and NetworkReady as the CRI does.
	Status(ctx context.Context) (*runtimeapi.RuntimeStatus, error)

	RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
	PodSandboxStatus(ctx context.Context, podSandboxID string) (*runtimeapi.PodSandboxStatus, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)

	CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	RemoveContainer(ctx context.Context, containerID string) error
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string) (*runtimeapi.ContainerStatus, error)

	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (ExecResult, error)
}

// ResourceUpdater is a runtime that changes the resources of a running
// container in place (the CRI's UpdateContainerResources), which
// in-place pod resize needs; a runtime without it cannot resize.
type ResourceUpdater interface {
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.LinuxContainerResources) error
}

// PodResourceUpdater is a runtime that changes the limits of a running
// pod's cgroup (the CRI's UpdatePodSandboxResources), which in-place
// resize of pod-level resources needs.
type PodResourceUpdater interface {
	UpdatePodSandboxResources(ctx context.Context, sandboxID string, resources *runtimeapi.LinuxContainerResources) error
}

// PodCgroupLimiter is a PodResourceUpdater whose pod cgroups the agent
// sizes itself: LimitPodCgroup writes the limits of pod uid's cgroup
// without telling the runtime, as the kubelet's pod container manager
// sizes a new pod's cgroup (the runtime is told only of resizes).
type PodCgroupLimiter interface {
	LimitPodCgroup(ctx context.Context, uid string, resources *runtimeapi.LinuxContainerResources) error
}

// QOSCgroups is a runtime whose pods' cgroups are in the kubelet's QoS
// tiers (cgroupsPerQOS): the agent names each sandbox's cgroup parent by
// its pod's class, as the kubelet's pod container manager, and keeps the
// tiers' settings current as pods come and go, as its QoS container
// manager.
type QOSCgroups interface {
	// PodCgroupParent is the cgroup parent of the sandbox of pod uid of
	// QoS class class (Guaranteed, Burstable, BestEffort).
	PodCgroupParent(uid, class string) string
	// UpdateQOSCgroups gives the tiers tiers.
	UpdateQOSCgroups(ctx context.Context, tiers QOSTiers) error
}

// QOSTiers are the settings of the QoS tiers' cgroups; zero is none.
type QOSTiers struct {
	BurstableCPUShares, BestEffortCPUShares int64
}

// TerminalSize is a terminal's width and height in characters, for a
// command run on a terminal (an exec with a tty).
type TerminalSize struct{ Width, Height uint16 }

// ExecResult is what a command run by ExecSync produced.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}

// Labels the agent puts on every sandbox and container, as the kubelet's
// kuberuntime does (types.KubernetesPodNameLabel and friends), so that
// after a restart it can tell which pod and container each belongs to
// from the runtime alone.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
)

// Annotations the agent puts on containers, as the kubelet does, to carry
// what it must know again after a restart.
const (
	AnnotationRestartCount           = "io.kubernetes.container.restartCount"
	AnnotationContainerHash          = "io.kubernetes.container.hash"
	AnnotationTerminationGracePeriod = "io.kubernetes.pod.terminationGracePeriod"
	// AnnotationTerminationMessagePath is the container path that the
	// termination-message file is mounted at: a runtime that cannot mount
	// may leave that one mount out (the message then falls back to none,
	// or to the log).
	AnnotationTerminationMessagePath = "io.kubernetes.container.terminationMessagePath"
)

// ImageService is the part of the CRI ImageService the agent uses, for a
// runtime that runs containers from images (the CRI runtime; the process
// runtime has none). Images are named as the pod spec names them; the
// runtime normalises them (docker.io/library/..., :latest).
type ImageService interface {
	// ImageStatus is the image, or nil without an error when the
	// runtime does not have it.
	ImageStatus(ctx context.Context, image string) (*runtimeapi.Image, error)
	// PullImage pulls image (with auth when not nil) for a pod of
	// sandboxConfig and returns its reference (the image ID).
	PullImage(ctx context.Context, image string, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	// ListImages lists every image the runtime has.
	ListImages(ctx context.Context) ([]*runtimeapi.Image, error)
}

// Streamer is a runtime with a streaming server of its own, as a CRI
// runtime has: exec, attach and port-forward sessions are served at the
// URL it returns, which the agent's server proxies to, as the kubelet does.
type Streamer interface {
	Exec(ctx context.Context, req *runtimeapi.ExecRequest) (string, error)
	Attach(ctx context.Context, req *runtimeapi.AttachRequest) (string, error)
	PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (string, error)
}
