// Package containerconfig turns a pod and one of its containers into the
// configurations the runtime takes (cri-api's PodSandboxConfig and
// ContainerConfig), as the kubelet's kuberuntime and kubelet_pods.go do:
// the environment with its fieldRef, resourceFieldRef, configMapKeyRef,
// secretKeyRef and envFrom references resolved through the API and $(VAR)
// expanded; command and args expanded; the volumes (emptyDir, hostPath,
// configMap, secret, downwardAPI, projected) materialised under
// <root>/pods/<uid>/volumes and passed as mounts; the log directory and
// path in upstream's layout; resources as LinuxContainerResources; the
// effective security context (user, groups, runAsNonRoot checked); the
// labels and annotations by which the agent knows its containers again.
//
// A configuration that cannot be built (a missing key that is not
// optional, a container without a command) is an error whose text is the
// Waiting message of reason CreateContainerConfigError.
package containerconfig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/podruntime"
	"github.com/kite-project/kite/agent/podstatus"
	"github.com/kite-project/kite/agent/runtime"
)

// Client reads the configMaps and secrets that pods refer to.
type Client interface {
	corev1client.ConfigMapsGetter
	corev1client.SecretsGetter
}

// Options configures a Builder.
type Options struct {
	// RootDir is the agent's --root-dir: volumes go under
	// <RootDir>/pods/<uid>/volumes. Required.
	RootDir string
	// LogDir holds the pods' log directories, <LogDir>/<ns>_<pod>_<uid>;
	// <RootDir>/pods when empty.
	LogDir string
	// Client reads configMaps and secrets; nil (standalone) makes every
	// reference to one an error.
	Client Client
	// NodeName is the node's name, the sandboxes' hostname.
	NodeName string
	// HostIPs are the node's addresses: status.hostIP(s) and, since pods
	// share the host's network, status.podIP(s).
	HostIPs []string
	// Allocatable is the node's allocatable resources, the default of
	// limits a resourceFieldRef reads when the container sets none.
	Allocatable v1.ResourceList
}

// Builder builds runtime configurations. It is safe for concurrent use.
type Builder struct {
	rootDir, logDir string
	client          Client
	node            string
	hostIPs         []string
	allocatable     v1.ResourceList
}

// New returns a Builder.
func New(opts Options) (*Builder, error) {
	if opts.RootDir == "" {
		return nil, errors.New("containerconfig: no root directory given")
	}
	logDir := opts.LogDir
	if logDir == "" {
		logDir = filepath.Join(opts.RootDir, "pods")
	}
	return &Builder{rootDir: opts.RootDir, logDir: logDir, client: opts.Client, node: opts.NodeName, hostIPs: opts.HostIPs, allocatable: opts.Allocatable}, nil
}

// LogDirectory is the pod's log directory, <LogDir>/<ns>_<pod>_<uid>, as
// the kubelet's /var/log/pods layout.
func (b *Builder) LogDirectory(pod *v1.Pod) string {
	return filepath.Join(b.logDir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// LogPath is a container instance's log file relative to the pod's log
// directory: <container>/<restartCount>.log.
func LogPath(container string, restartCount int) string {
	return filepath.Join(container, strconv.Itoa(restartCount)+".log")
}

// NextRestartCount is the restart count of the next instance of a
// container: one more than the last instance's, or, when the runtime has
// none, one more than the largest N of the N.log files in its log
// directory (as upstream's calcRestartCountByLogDir), else 0.
func (b *Builder) NextRestartCount(pod *v1.Pod, container string, last *podruntime.Container) int {
	if last != nil {
		return last.RestartCount + 1
	}
	entries, err := os.ReadDir(filepath.Join(b.LogDirectory(pod), container))
	if err != nil {
		return 0
	}
	n := -1
	for _, e := range entries {
		base, _, _ := strings.Cut(e.Name(), ".log")
		if k, err := strconv.Atoi(base); err == nil && strings.Contains(e.Name(), ".log") && k > n {
			n = k
		}
	}
	return n + 1
}

// SandboxConfig is the pod's sandbox configuration for attempt.
func (b *Builder) SandboxConfig(pod *v1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	annotations := map[string]string{}
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Hostname:     b.node,
		LogDirectory: b.LogDirectory(pod),
		Labels:       podLabels(pod),
		Annotations:  annotations,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}},
			Resources:       podResources(pod),
		},
	}
}

func podLabels(pod *v1.Pod) map[string]string {
	l := map[string]string{}
	for k, v := range pod.Labels {
		l[k] = v
	}
	l[runtime.LabelPodName] = pod.Name
	l[runtime.LabelPodNamespace] = pod.Namespace
	l[runtime.LabelPodUID] = string(pod.UID)
	return l
}

// ErrNoCommand is wrapped by ContainerConfig's error for a container
// without a command.
var ErrNoCommand = errors.New("container has no command")

// ContainerConfig is the configuration of the container's next instance,
// restartCount its restart count and volumes the host paths that Volumes
// returned.
func (b *Builder) ContainerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, restartCount int, volumes map[string]string) (*runtimeapi.ContainerConfig, error) {
	if len(c.Command) == 0 {
		return nil, fmt.Errorf("%w: the process runtime runs command and args as host processes and cannot read image %q's entrypoint; set command for container %q", ErrNoCommand, c.Image, c.Name)
	}
	env, err := b.Env(ctx, pod, c)
	if err != nil {
		return nil, err
	}
	vars := make(map[string]string, len(env))
	envs := make([]*runtimeapi.KeyValue, 0, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
		envs = append(envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	expand := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = Expand(s, mappingFor(vars))
		}
		return out
	}
	mounts, err := mountsOf(c, volumes, vars)
	if err != nil {
		return nil, err
	}
	if c.TerminationMessagePath != "" {
		m, err := b.terminationMessageMount(pod, c, restartCount)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, m)
	}
	sc, err := securityContext(pod, c)
	if err != nil {
		return nil, err
	}
	labels := podLabels(pod)
	labels[runtime.LabelContainerName] = c.Name
	annotations := map[string]string{
		runtime.AnnotationRestartCount:  strconv.Itoa(restartCount),
		runtime.AnnotationContainerHash: podruntime.HashContainer(c),
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		annotations[runtime.AnnotationTerminationGracePeriod] = strconv.FormatInt(*g, 10)
	}
	if c.TerminationMessagePath != "" {
		annotations[runtime.AnnotationTerminationMessagePath] = c.TerminationMessagePath
	}
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: c.Image},
		Command:     expand(c.Command),
		Args:        expand(c.Args),
		WorkingDir:  c.WorkingDir,
		Envs:        envs,
		Mounts:      mounts,
		Labels:      labels,
		Annotations: annotations,
		LogPath:     LogPath(c.Name, restartCount),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux:       &runtimeapi.LinuxContainerConfig{Resources: b.resources(pod, c), SecurityContext: sc},
	}, nil
}

// TerminationMessageFile is the host file bound at a container instance's
// terminationMessagePath, as the kubelet's pods/<uid>/containers/<name>/<id>
// (the restart count names the instance here).
func (b *Builder) TerminationMessageFile(pod *v1.Pod, container string, restartCount int) string {
	return filepath.Join(b.PodDir(pod), "containers", container, strconv.Itoa(restartCount))
}

// terminationMessageMount creates the instance's termination-message file,
// empty and writable by any user (the kubelet chmods it 0666, whatever the
// umask, so that a container running as non-root can write its message),
// and mounts it at terminationMessagePath.
func (b *Builder) terminationMessageMount(pod *v1.Pod, c *v1.Container, restartCount int) (*runtimeapi.Mount, error) {
	path := b.TerminationMessageFile(pod, c.Name, restartCount)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("termination message file of container %q: %w", c.Name, err)
	}
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		return nil, fmt.Errorf("termination message file of container %q: %w", c.Name, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		return nil, fmt.Errorf("termination message file of container %q: %w", c.Name, err)
	}
	return &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: path}, nil
}

func mountsOf(c *v1.Container, volumes map[string]string, vars map[string]string) ([]*runtimeapi.Mount, error) {
	var out []*runtimeapi.Mount
	for _, m := range c.VolumeMounts {
		host, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", m.Name, c.Name)
		}
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = Expand(m.SubPathExpr, mappingFor(vars))
		}
		if sub != "" {
			if filepath.IsAbs(sub) || strings.HasPrefix(filepath.Clean(sub), "..") {
				return nil, fmt.Errorf("subPath %q of volume %q must be a relative path without '..'", sub, m.Name)
			}
			host = filepath.Join(host, sub)
			if _, err := os.Stat(host); os.IsNotExist(err) {
				if err := os.MkdirAll(host, 0o755); err != nil {
					return nil, fmt.Errorf("subPath %q of volume %q: %w", sub, m.Name, err)
				}
			}
		}
		out = append(out, &runtimeapi.Mount{ContainerPath: m.MountPath, HostPath: host, Readonly: m.ReadOnly})
	}
	return out, nil
}

// Cgroup CPU arithmetic, as the kubelet's (cm.MilliCPUToShares,
// MilliCPUToQuota).
const (
	minShares   = 2
	maxShares   = 262144
	quotaPeriod = 100000
	minQuota    = 1000
)

// resources are the container's requests and limits as the kubelet passes
// them to a runtime (generateLinuxContainerResources).
func (b *Builder) resources(pod *v1.Pod, c *v1.Container) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	cpuReq := c.Resources.Requests.Cpu().MilliValue()
	if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
		if l, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
			cpuReq = l.MilliValue()
		}
	}
	shares := cpuReq * 1024 / 1000
	r.CpuShares = min(max(shares, minShares), maxShares)
	if l, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = max(l.MilliValue()*quotaPeriod/1000, minQuota)
	}
	if l, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = l.Value()
	}
	r.OomScoreAdj = b.oomScoreAdj(pod, c)
	return r
}

// podResources are the pod cgroup's limits, as the kubelet's
// ResourceConfigForPod: CPU shares from the requests; a CPU quota and a
// memory limit only when every container limits them (else the pod is
// unbounded in it). An init container runs alone, so the pod needs the
// larger of the largest init container and the sum of the others;
// pod-level resources, when set, decide.
func podResources(pod *v1.Pod) *runtimeapi.LinuxContainerResources {
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	if r := pod.Spec.Resources; r != nil && (len(r.Requests) > 0 || len(r.Limits) > 0) {
		requests, limits = r.Requests, r.Limits
	} else {
		cpuLimited, memLimited := true, true
		add := func(l v1.ResourceList, sum v1.ResourceList) {
			for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
				if q, ok := l[n]; ok {
					t := sum[n]
					t.Add(q)
					sum[n] = t
				}
			}
		}
		for _, c := range pod.Spec.Containers {
			add(c.Resources.Requests, requests)
			add(c.Resources.Limits, limits)
			_, hasCPU := c.Resources.Limits[v1.ResourceCPU]
			_, hasMem := c.Resources.Limits[v1.ResourceMemory]
			cpuLimited, memLimited = cpuLimited && hasCPU, memLimited && hasMem
		}
		for _, c := range pod.Spec.InitContainers {
			for _, n := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
				if q, ok := c.Resources.Requests[n]; ok && q.Cmp(requests[n]) > 0 {
					requests[n] = q
				}
				if q, ok := c.Resources.Limits[n]; ok && q.Cmp(limits[n]) > 0 {
					limits[n] = q
				}
			}
		}
		if !cpuLimited {
			delete(limits, v1.ResourceCPU)
		}
		if !memLimited {
			delete(limits, v1.ResourceMemory)
		}
	}
	r := &runtimeapi.LinuxContainerResources{}
	r.CpuShares = min(max(requests.Cpu().MilliValue()*1024/1000, minShares), maxShares)
	if l, ok := limits[v1.ResourceCPU]; ok {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = max(l.MilliValue()*quotaPeriod/1000, minQuota)
	}
	if l, ok := limits[v1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = l.Value()
	}
	return r
}

// oomScoreAdj is the kubelet's policy (pkg/kubelet/qos/policy.go).
func (b *Builder) oomScoreAdj(pod *v1.Pod, c *v1.Container) int64 {
	switch podstatus.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return -997
	case v1.PodQOSBestEffort:
		return 1000
	}
	capacity := b.allocatable.Memory().Value()
	if capacity == 0 {
		return 999
	}
	adj := 1000 - (1000*c.Resources.Requests.Memory().Value())/capacity
	return min(max(adj, 3), 999)
}

// RemovePodDir removes the pod's directory (its volumes) once the pod is
// terminated. hostPath volumes are never under it.
func (b *Builder) RemovePodDir(pod *v1.Pod) error {
	return os.RemoveAll(b.PodDir(pod))
}
