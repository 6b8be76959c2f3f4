// Package containerconfig turns a pod and one of its containers into the
// configurations the runtime takes (cri-api's PodSandboxConfig and
// ContainerConfig), as the kubelet's kuberuntime and kubelet_pods.go do:
// the environment with its fieldRef, resourceFieldRef, configMapKeyRef,
// secretKeyRef and envFrom references resolved and $(VAR) expanded;
// command and args expanded; the volumes as mounts; the log directory and
// path in upstream's layout; resources as LinuxContainerResources; the
// effective security context (user, groups, runAsNonRoot checked); the
// labels and annotations by which the agent knows its containers again;
// and the files of content volumes (configMap, secret, downwardAPI,
// projected).
//
// Everything here is pure: what it reads besides the pod (the node's
// facts, the configMaps and secrets the pod refers to, where its volumes
// are) comes in Inputs, and nothing is read from the API or written to
// disk. The runner that gathers Inputs through an informer-backed cache
// and writes the volumes is package volumes.
//
// A configuration that cannot be built (a missing key that is not
// optional, a container without a command) is an error whose text is the
// Waiting message of reason CreateContainerConfigError.
package containerconfig

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/podruntime"
	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/apis/core/qos"
)

// Inputs are what a configuration is built from besides the pod.
type Inputs struct {
	// NodeName is the node's name, the sandboxes' hostname.
	NodeName string
	// HostIPs are the node's addresses: status.hostIP(s) and, since pods
	// share the host's network, status.podIP(s).
	HostIPs []string
	// Allocatable is the node's allocatable resources, the default of
	// limits a resourceFieldRef reads when the container sets none, and
	// the base of the OOM score.
	Allocatable v1.ResourceList
	// PodNetwork says that the runtime gives a pod that is not
	// hostNetwork a network namespace of its own (SandboxConfig), whose
	// addresses, PodIPs, are then status.podIP(s) for the downward API.
	PodNetwork bool
	PodIPs     []string
	// LogDirectory is the pod's log directory (LogDirectory).
	LogDirectory string
	// HostDNS is the node's resolv.conf (ParseResolvConf), the base of
	// a pod's dnsConfig; nil is none.
	HostDNS *runtimeapi.DNSConfig
	// ClusterDNS are the cluster DNS's addresses (--cluster-dns) and
	// ClusterDomain the cluster's domain (--cluster-domain), of the
	// ClusterFirst policies (PodDNS); none means ClusterFirst falls back
	// to Default.
	ClusterDNS    []string
	ClusterDomain string
	// Services are the Services whose variables containers get (the
	// pod's namespace's and default's; ServiceEnv picks); nil is none.
	Services []*v1.Service
	// RunsImages says that the runtime runs containers from their images
	// (a CRI runtime): a container without command runs its image's
	// entrypoint, and ImageUser is the user its image runs as.
	RunsImages bool
	// ImageUser is the image's user (the runtime's ImageStatus: uid or
	// name), for runAsNonRoot; nil when unknown.
	ImageUser *ImageUser
	// SeccompProfileRoot is the directory of Localhost seccomp profiles
	// (the kubelet's <root-dir>/seccomp).
	SeccompProfileRoot string
	// PodDir is the pod's directory, where the files bound at its
	// containers' terminationMessagePath are (TerminationMessageFile).
	PodDir string
	// RestartCount is the restart count of the instance to configure.
	RestartCount int
	// Volumes are the host paths of the pod's volumes by name, as the
	// runner set them up.
	Volumes map[string]string
	// ConfigMaps and Secrets are those of the pod's namespace that it
	// refers to (References), by name. A name not in the map does not
	// exist (NotFound); one whose read failed has its error.
	ConfigMaps map[string]Lookup[*v1.ConfigMap]
	Secrets    map[string]Lookup[*v1.Secret]
	// ServiceAccountToken returns the token a projected
	// serviceAccountToken source asks for the pod (the runner asks the
	// API, TokenRequest); nil (standalone) makes such a source an error.
	ServiceAccountToken func(src *v1.ServiceAccountTokenProjection) ([]byte, error)
}

// Lookup is one object as the runner found it: the object, or why there
// is none.
type Lookup[T any] struct {
	Object T
	Err    error
}

// configMap is the configMap name of the pod's namespace.
func (in *Inputs) configMap(name string) (*v1.ConfigMap, error) {
	l, ok := in.ConfigMaps[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return l.Object, l.Err
}

// secret is the secret name of the pod's namespace.
func (in *Inputs) secret(name string) (*v1.Secret, error) {
	l, ok := in.Secrets[name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
	}
	return l.Object, l.Err
}

// LogDirectory is the pod's log directory under root, <root>/<ns>_<pod>_<uid>,
// as the kubelet's /var/log/pods layout.
func LogDirectory(root string, pod *v1.Pod) string {
	return filepath.Join(root, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// LogPath is a container instance's log file relative to the pod's log
// directory: <container>/<restartCount>.log.
func LogPath(container string, restartCount int) string {
	return filepath.Join(container, strconv.Itoa(restartCount)+".log")
}

// NextRestartCount is the restart count of the next instance of a
// container: one more than the last instance's, or, when the runtime has
// none, one more than the largest N of the N.log files logs names (the
// container's log directory, as upstream's calcRestartCountByLogDir),
// else 0.
func NextRestartCount(last *podruntime.Container, logs []string) int {
	if last != nil {
		return last.RestartCount + 1
	}
	n := -1
	for _, name := range logs {
		base, _, _ := strings.Cut(name, ".log")
		if k, err := strconv.Atoi(base); err == nil && strings.Contains(name, ".log") && k > n {
			n = k
		}
	}
	return n + 1
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

// ErrNoCommand is wrapped by Build's error for a container
// without a command.
var ErrNoCommand = errors.New("container has no command")

// Build is the configuration of the container's next instance (of
// in.RestartCount, with in.Volumes mounted).
func Build(pod *v1.Pod, c *v1.Container, in Inputs) (*runtimeapi.ContainerConfig, error) {
	if len(c.Command) == 0 && !in.RunsImages {
		return nil, fmt.Errorf("%w: the process runtime runs command and args as host processes and cannot read image %q's entrypoint; set command for container %q", ErrNoCommand, c.Image, c.Name)
	}
	env, err := Env(pod, c, in)
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
	mounts, err := mountsOf(c, in.Volumes, vars)
	if err != nil {
		return nil, err
	}
	restartCount := in.RestartCount
	if c.TerminationMessagePath != "" {
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: TerminationMessageFile(in.PodDir, c.Name, restartCount)})
	}
	if mountsHostsFile(c, in) {
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: EtcHostsPath, HostPath: HostsFile(in.PodDir)})
	}
	sc, err := securityContext(pod, c, in)
	if err != nil {
		return nil, err
	}
	// Each container states the pod's namespaces, as the kubelet's
	// determineEffectiveSecurityContext: a runtime reads none from the
	// sandbox, and takes a container without them as one sharing the
	// pod's PID namespace (containerd's zero value, POD).
	sc.NamespaceOptions = Namespaces(pod, in.PodNetwork)
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
		Linux:       &runtimeapi.LinuxContainerConfig{Resources: resources(pod, c, in.Allocatable), SecurityContext: sc},
	}, nil
}

// TerminationMessageFile is the host file bound at a container instance's
// terminationMessagePath, under the pod's directory podDir, as the
// kubelet's pods/<uid>/containers/<name>/<id> (the restart count names the
// instance here). The runner creates it before the instance starts.
func TerminationMessageFile(podDir, container string, restartCount int) string {
	return filepath.Join(podDir, "containers", container, strconv.Itoa(restartCount))
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
			// The runner creates it if missing (upstream's makeMounts).
			host = filepath.Join(host, sub)
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
func resources(pod *v1.Pod, c *v1.Container, allocatable v1.ResourceList) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	cpuReq := c.Resources.Requests.Cpu().MilliValue()
	if _, ok := c.Resources.Requests[v1.ResourceCPU]; !ok {
		if l, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
			cpuReq = l.MilliValue()
		}
	}
	r.CpuShares = milliCPUToShares(cpuReq)
	if l, ok := c.Resources.Limits[v1.ResourceCPU]; ok {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = milliCPUToQuota(l.MilliValue())
	}
	if l, ok := c.Resources.Limits[v1.ResourceMemory]; ok {
		r.MemoryLimitInBytes = l.Value()
	}
	r.OomScoreAdj = oomScoreAdj(pod, c, allocatable)
	return r
}

// podResources are the pod cgroup's limits, as the kubelet 1.37's
// ResourceConfigForPod (cpu quota enforced, the default period, no
// MemoryQoS) gives every pod, whatever its class:
//
//   - the pod's requests and limits are upstream's PodRequests and
//     PodLimits: the containers summed with the restartable (sidecar) init
//     containers, which run beside them, and at least each ordinary init
//     container with the sidecars started before it; pod-level resources
//     replace what they name; spec.overhead (from the RuntimeClass) is added
//     to the requests and to the limits that are set;
//   - cpu shares from the cpu requests (2 when none);
//   - Guaranteed: a cpu quota and a memory limit from the limits;
//   - Burstable: the cpu quota only when every container (init containers
//     too) limits cpu or the pod-level resources do, the memory limit only
//     when every container limits memory or the pod-level resources do;
//   - BestEffort: 2 shares and nothing else;
//   - every class: the huge page requests of each page size as its limit
//     (the runtime limits the sizes not requested to 0).
//
// The class is the pod's status.qosClass (GetPodQOS), as the kubelet's.
// No quota (CpuQuota 0) and no memory limit (0) leave the cgroup unbounded.
func podResources(pod *v1.Pod) *runtimeapi.LinuxContainerResources {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	cpuLimited, memLimited := true, true
	for _, c := range allContainers(pod) {
		cpuLimited = cpuLimited && !c.Resources.Limits.Cpu().IsZero()
		memLimited = memLimited && !c.Resources.Limits.Memory().IsZero()
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		cpuLimited = cpuLimited || !pod.Spec.Resources.Limits.Cpu().IsZero()
		memLimited = memLimited || !pod.Spec.Resources.Limits.Memory().IsZero()
	}
	r := &runtimeapi.LinuxContainerResources{CpuShares: minShares, HugepageLimits: hugepageLimits(requests)}
	class := qos.GetPodQOS(pod)
	if class == v1.PodQOSBestEffort {
		return r
	}
	r.CpuShares = milliCPUToShares(requests.Cpu().MilliValue())
	if class == v1.PodQOSGuaranteed || cpuLimited {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = milliCPUToQuota(limits.Cpu().MilliValue())
	}
	if class == v1.PodQOSGuaranteed || memLimited {
		r.MemoryLimitInBytes = limits.Memory().Value()
	}
	return r
}

// hugepageLimits are the pod's huge page requests by page size, as the
// kubelet's HugePageLimits, with page sizes named as runc names them
// (HugePageUnitSizeFromByteSize: "2MB", "1GB"), smallest first.
func hugepageLimits(requests v1.ResourceList) []*runtimeapi.HugepageLimit {
	bySize := map[int64]int64{}
	for name, q := range requests {
		size, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		pageSize, err := resource.ParseQuantity(size)
		if err != nil {
			continue // validation refuses such a name
		}
		bySize[pageSize.Value()] += q.Value()
	}
	var out []*runtimeapi.HugepageLimit
	for _, size := range slices.Sorted(maps.Keys(bySize)) {
		if name, ok := runtime.HugePageSizeName(size); ok {
			out = append(out, &runtimeapi.HugepageLimit{PageSize: name, Limit: uint64(bySize[size])})
		}
	}
	return out
}

// milliCPUToShares is the kubelet's MilliCPUToShares: no request is the
// kernel's minimum, not its default of 1024.
func milliCPUToShares(milliCPU int64) int64 {
	if milliCPU == 0 {
		return minShares
	}
	return min(max(milliCPU*1024/1000, minShares), maxShares)
}

// milliCPUToQuota is the kubelet's MilliCPUToQuota over the default
// period: no limit is no quota; a quota is at least 1ms.
func milliCPUToQuota(milliCPU int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*quotaPeriod/1000, minQuota)
}

// oomScoreAdj is the kubelet's policy (pkg/kubelet/qos/policy.go,
// GetContainerOOMScoreAdjust): a node-critical pod (static, mirror or of
// a system priority, and of the system-node-critical class) and a
// Guaranteed one -997, a BestEffort one 1000; a Burstable container 1000
// less its share of the node's memory in thousandths (its request, plus
// an even share of a pod-level memory request the containers leave over),
// a sidecar no higher than the regular container of the smallest
// request, kept within 3..999.
func oomScoreAdj(pod *v1.Pod, c *v1.Container, allocatable v1.ResourceList) int64 {
	if nodeCritical(pod) {
		return -997
	}
	switch qos.GetPodQOS(pod) {
	case v1.PodQOSGuaranteed:
		return -997
	case v1.PodQOSBestEffort:
		return 1000
	}
	capacity := allocatable.Memory().Value()
	if capacity == 0 {
		return 999
	}
	var extra int64
	if resourcehelper.IsPodLevelRequestsSet(pod) && !pod.Spec.Resources.Requests.Memory().IsZero() {
		ctrs := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
		left := pod.Spec.Resources.Requests.Memory().Value() - ctrs.Memory().Value()
		extra = max(left, 0) / int64(len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
	}
	adj := 1000 - (1000*(c.Resources.Requests.Memory().Value()+extra))/capacity
	if sidecar(pod, c) && len(pod.Spec.Containers) > 0 {
		least := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
		for _, o := range pod.Spec.Containers[1:] {
			least = min(least, o.Resources.Requests.Memory().Value())
		}
		adj = min(adj, 1000-(1000*(least+extra))/capacity)
	}
	return min(max(adj, 3), 999)
}

// nodeCritical is the kubelet's IsNodeCriticalPod.
func nodeCritical(pod *v1.Pod) bool {
	const systemCritical = 2000000000 // scheduling.SystemCriticalPriority
	critical := kubetypes.IsStaticPod(pod) || kubetypes.IsMirrorPod(pod) || pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCritical
	return critical && pod.Spec.PriorityClassName == "system-node-critical"
}

// sidecar says that c is one of the pod's restartable init containers.
func sidecar(pod *v1.Pod, c *v1.Container) bool {
	if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
		return false
	}
	for _, ic := range pod.Spec.InitContainers {
		if ic.Name == c.Name {
			return true
		}
	}
	return false
}
