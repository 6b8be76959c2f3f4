package podsync

import (
	"context"
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/containerconfig"
	"github.com/kite-project/kite/agent/podactions"
	"github.com/kite-project/kite/agent/podruntime"
	"github.com/kite-project/kite/agent/runtime"
)

// resizeState is the kubelet's allocation manager and resize conditions
// (guarded by Manager.mu): what each pod was allocated, what each running
// container instance was given, and each pod's PodResizePending /
// PodResizeInProgress conditions. The allocations and what each instance
// was given are checkpointed (allocstate.go, <root-dir>/allocated_pods_state)
// whenever they change, so that after an agent restart a pod's first sync
// starts from its allocation, not its spec: a resize applied before the
// restart is neither applied again nor taken for a new one, one deferred
// stays deferred, and a container whose resizePolicy restarts it is not
// restarted for nothing.
type resizeState struct {
	// allocated are the pods with their allocated resources, by UID: the
	// other pods a resize must fit beside.
	allocated map[types.UID]*v1.Pod
	// actuated are the resources each container instance was started
	// with or last updated to, by pod UID and runtime ID.
	actuated map[types.UID]map[string]v1.ResourceRequirements
	// conditions are each pod's resize conditions.
	conditions map[types.UID][]v1.PodCondition
	// podCgroups are the limits each pod's sandbox cgroup was last
	// given, by pod UID. Not checkpointed: after an agent restart a
	// pod's first sync gives them again, which writes the same limits at
	// worst.
	podCgroups map[types.UID]podCgroup
	// restored are the checkpoint's entries of pods not synced since the
	// agent started; a pod's first sync claims its entry. Housekeeping
	// drops the entries of pods no source has.
	restored map[types.UID]allocationEntry
	// saveMu serializes checkpoint writes; saved is the content last
	// written (guarded by saveMu).
	saveMu sync.Mutex
	saved  []byte
}

func newResizeState() resizeState {
	return resizeState{allocated: map[types.UID]*v1.Pod{}, actuated: map[types.UID]map[string]v1.ResourceRequirements{}, conditions: map[types.UID][]v1.PodCondition{},
		podCgroups: map[types.UID]podCgroup{}}
}

// podCgroup is what the cgroup of a pod's sandbox was last given.
type podCgroup struct {
	sandbox string
	given   *runtimeapi.LinuxContainerResources
}

func (s *resizeState) forget(uid types.UID) {
	delete(s.restored, uid)
	delete(s.allocated, uid)
	delete(s.actuated, uid)
	delete(s.conditions, uid)
	delete(s.podCgroups, uid)
}

// allocate decides the pod's resize and returns the pod with the
// resources its containers run with (the allocation), as the kubelet's
// handlePodResourcesResize before its SyncPod: the first sync allocates
// the spec; a later spec change is allocated when it fits (with
// PodResizeInProgress until actuate gave it to every running instance),
// else the PodResizePending condition says why (with a ResizeDeferred or
// ResizeInfeasible event when it changes).
//
// A pod first synced after an agent restart starts from its checkpointed
// allocation (and its instances from what they were given), as the
// kubelet's allocation manager after a restart.
func (m *Manager) allocate(ctx context.Context, pod *v1.Pod) *v1.Pod {
	defer m.saveAllocations(ctx)
	_, supported := m.rt.(runtime.ResourceUpdater)
	m.mu.Lock()
	prev, ok := m.resize.allocated[pod.UID]
	if !ok {
		e, restored := m.resize.restored[pod.UID]
		if !restored {
			m.resize.allocated[pod.UID] = pod
			m.mu.Unlock()
			return pod
		}
		delete(m.resize.restored, pod.UID)
		prev = podactions.WithAllocation(pod, e.allocation())
		m.resize.allocated[pod.UID] = prev
		if len(e.ActuatedResources) > 0 {
			m.resize.actuated[pod.UID] = e.ActuatedResources
		}
	}
	var others []*v1.Pod
	for uid, p := range m.resize.allocated {
		if uid != pod.UID {
			others = append(others, p)
		}
	}
	m.mu.Unlock()
	alloc := podactions.AllocationOf(prev)
	d := podactions.DecideResize(pod, alloc, others, m.opts.Allocatable, m.opts.MaxPods, supported)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.resize.conditions[pod.UID]
	switch {
	case d.Allocate || !podactions.ResizeRequested(pod, alloc):
		// Allocated, or the spec went back to the allocation.
		m.resize.allocated[pod.UID] = pod
		m.resize.conditions[pod.UID] = withoutCondition(old, v1.PodResizePending)
		if d.Allocate {
			// In progress until actuate has given every running
			// instance its allocation.
			m.resize.conditions[pod.UID] = withCondition(m.resize.conditions[pod.UID], v1.PodCondition{Type: v1.PodResizeInProgress,
				Status: v1.ConditionTrue, ObservedGeneration: pod.Generation})
			m.events.Eventf(pod, v1.EventTypeNormal, "ResizeStarted", "Pod resize started: %s", resizeSummary(pod))
		}
		return pod
	default:
		if c := findCondition(old, v1.PodResizePending); c == nil || c.Reason != d.Reason || c.ObservedGeneration != pod.Generation {
			event := "ResizeDeferred"
			if d.Reason == podactions.ResizeInfeasible {
				event = "ResizeInfeasible"
			}
			m.events.Eventf(pod, v1.EventTypeWarning, event, "Pod resize %s: %s", d.Reason, d.Message)
		}
		m.resize.conditions[pod.UID] = withCondition(old, v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue,
			Reason: d.Reason, Message: d.Message, ObservedGeneration: pod.Generation})
		return podactions.WithAllocation(pod, alloc)
	}
}

// allocatedPod is pod with its containers' resources its allocation (this
// run's, else the checkpoint's), or pod itself when it has none yet, as
// the kubelet's UpdatePodFromAllocation.
func (m *Manager) allocatedPod(pod *v1.Pod) *v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.resize.allocated[pod.UID]; ok {
		return podactions.WithAllocation(pod, podactions.AllocationOf(p))
	}
	if e, ok := m.resize.restored[pod.UID]; ok {
		return podactions.WithAllocation(pod, e.allocation())
	}
	return pod
}

// resizeSummary is the spec's container resources, for the event.
func resizeSummary(pod *v1.Pod) string {
	var out []string
	for _, c := range pod.Spec.Containers {
		out = append(out, fmt.Sprintf("%s: requests %v limits %v", c.Name, c.Resources.Requests, c.Resources.Limits))
	}
	return fmt.Sprint(out)
}

// actuate gives every running container instance of the pod its
// allocated resources, as kuberuntime's doPodResizeAction: through
// UpdateContainerResources, or by a restart where the container's
// resizePolicy asks for one for a resource that changed. A failure is the
// PodResizeInProgress condition with reason Error until a later sync
// succeeds; no condition is left once every instance has its allocation.
func (m *Manager) actuate(ctx context.Context, allocated *v1.Pod, rt *podruntime.Pod, start func(c *v1.Container) error) {
	updater, ok := m.rt.(runtime.ResourceUpdater)
	if !ok {
		return
	}
	var errs []error
	// The pod's cgroup: what grows before the containers (so that
	// containers given more find room in it), what shrinks after them
	// (cgroup v1 refuses a parent quota below a child's), as the
	// kubelet orders them.
	podLevel := m.planPodCgroup(allocated, rt)
	if podLevel.before != nil {
		if err := m.givePodCgroup(ctx, allocated, podLevel.sandbox, podLevel.before, podLevel.after == nil); err != nil {
			errs = append(errs, fmt.Errorf("resize pod %s/%s: %w", allocated.Namespace, allocated.Name, err))
			podLevel.after = nil
		}
	}
	// The app containers and the init containers (restartable ones run
	// beside them).
	for _, c := range containerconfig.AllContainers(allocated) {
		inst := rt.Instances(c.Name)
		if len(inst) == 0 || inst[0].State != podruntime.Running {
			continue
		}
		id := inst[0].ID
		m.mu.Lock()
		have, known := m.resize.actuated[allocated.UID][id]
		m.mu.Unlock()
		if known && apiequality.Semantic.DeepEqual(have, c.Resources) {
			continue
		}
		if known && podactions.RestartsToResize(c, have, c.Resources) {
			klog.FromContext(ctx).V(2).Info("Restarting container to resize it", "pod", klog.KObj(allocated), "container", c.Name)
			if err := m.killContainer(ctx, allocated, c, id, fmt.Sprintf("Container %s resize requires restart", c.Name), nil); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := start(c); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := updater.UpdateContainerResources(ctx, id, containerconfig.Resources(allocated, c, m.opts.Allocatable)); err != nil {
			errs = append(errs, fmt.Errorf("resize container %s of pod %s/%s: %w", c.Name, allocated.Namespace, allocated.Name, err))
			continue
		}
		m.setActuated(allocated.UID, id, c.Resources)
	}
	if podLevel.after != nil {
		if err := m.givePodCgroup(ctx, allocated, podLevel.sandbox, podLevel.after, true); err != nil {
			errs = append(errs, fmt.Errorf("resize pod %s/%s: %w", allocated.Namespace, allocated.Name, err))
		}
	}
	m.saveAllocations(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.resize.conditions[allocated.UID]
	if err := errors.Join(errs...); err != nil {
		m.resize.conditions[allocated.UID] = withCondition(old, v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue,
			Reason: v1.PodReasonError, Message: err.Error(), ObservedGeneration: allocated.Generation})
		return
	}
	m.resize.conditions[allocated.UID] = withoutCondition(old, v1.PodResizeInProgress)
}

// podCgroupPlan is what actuate gives the cgroup of the pod's ready
// sandbox: before the containers are resized and after (each nil when
// nothing).
type podCgroupPlan struct {
	sandbox       string
	before, after *runtimeapi.LinuxContainerResources
}

// planPodCgroup decides what the pod cgroup of the allocated pod is given
// around a resize of its containers (containerconfig.PodCgroupResize from
// what the sandbox was last given). Every pod has its pod cgroup sized,
// as the kubelet's; a pod with pod-level resources whose sandbox has not
// recorded them (a sandbox made before an agent restart without a
// checkpoint, or a resize of the pod-level memory request alone, which
// changes no cgroup value) is given its limits again so that they are
// recorded for its status.
func (m *Manager) planPodCgroup(allocated *v1.Pod, rt *podruntime.Pod) podCgroupPlan {
	if _, ok := m.rt.(runtime.PodResourceUpdater); !ok {
		return podCgroupPlan{}
	}
	var id string
	for _, sb := range rt.Sandboxes {
		if sb.Ready {
			id = sb.ID
			break
		}
	}
	if id == "" {
		return podCgroupPlan{}
	}
	m.mu.Lock()
	var have *runtimeapi.LinuxContainerResources
	if pc, ok := m.resize.podCgroups[allocated.UID]; ok && pc.sandbox == id {
		have = pc.given
	}
	recorded, known := m.resize.actuated[allocated.UID][id]
	m.mu.Unlock()
	plan := podCgroupPlan{sandbox: id}
	plan.before, plan.after = containerconfig.PodCgroupResize(have, containerconfig.PodResources(allocated))
	if plan.before == nil && plan.after == nil && allocated.Spec.Resources != nil && (!known || !apiequality.Semantic.DeepEqual(recorded, *allocated.Spec.Resources)) {
		plan.after = have
	}
	return plan
}

// limitNewSandbox gives the cgroup of a pod's new sandbox its limits, as
// the kubelet's pod container manager creates the pod cgroup with them
// before the sandbox: containerd 1.6 makes the sandbox's cgroup parent
// without applying the sandbox config's resources, so without this a pod
// would run unbounded but for its containers' own limits. Like the
// kubelet, it does not tell the runtime (PodCgroupLimiter) where it can.
func (m *Manager) limitNewSandbox(ctx context.Context, allocated *v1.Pod, id string) error {
	if _, ok := m.rt.(runtime.PodResourceUpdater); !ok {
		return nil
	}
	res := containerconfig.PodResources(allocated)
	l, ok := m.rt.(runtime.PodCgroupLimiter)
	if !ok {
		if err := m.givePodCgroup(ctx, allocated, id, res, true); err != nil {
			return fmt.Errorf("pod cgroup of the new sandbox of pod %s/%s: %w", allocated.Namespace, allocated.Name, err)
		}
		return nil
	}
	if err := l.LimitPodCgroup(ctx, string(allocated.UID), res); err != nil {
		return fmt.Errorf("pod cgroup of the new sandbox of pod %s/%s: %w", allocated.Namespace, allocated.Name, err)
	}
	m.gavePodCgroup(allocated, id, res, true)
	return nil
}

// givePodCgroup gives sandbox id's cgroup res through the runtime's
// UpdatePodSandboxResources and remembers it (gavePodCgroup).
func (m *Manager) givePodCgroup(ctx context.Context, allocated *v1.Pod, id string, res *runtimeapi.LinuxContainerResources, final bool) error {
	if err := m.rt.(runtime.PodResourceUpdater).UpdatePodSandboxResources(ctx, id, res); err != nil {
		return err
	}
	m.gavePodCgroup(allocated, id, res, final)
	return nil
}

// gavePodCgroup remembers that sandbox id's cgroup has res; final says
// that res is the allocation's, whose pod-level resources, if any, are
// then recorded as actuated (the caller checkpoints).
func (m *Manager) gavePodCgroup(allocated *v1.Pod, id string, res *runtimeapi.LinuxContainerResources, final bool) {
	m.mu.Lock()
	m.resize.podCgroups[allocated.UID] = podCgroup{sandbox: id, given: res}
	m.mu.Unlock()
	if final && allocated.Spec.Resources != nil {
		m.setActuated(allocated.UID, id, *allocated.Spec.Resources)
	}
}

// setActuated records that instance id of the pod has r; the caller
// checkpoints it (saveAllocations).
func (m *Manager) setActuated(uid types.UID, id string, r v1.ResourceRequirements) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.resize.actuated[uid] == nil {
		m.resize.actuated[uid] = map[string]v1.ResourceRequirements{}
	}
	m.resize.actuated[uid][id] = *r.DeepCopy()
}

// saveAllocations checkpoints the resize state if it changed. A failed
// write is logged: the agent goes on from memory, as the kubelet does.
func (m *Manager) saveAllocations(ctx context.Context) {
	if err := m.checkpointAllocations(); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to checkpoint pod allocations")
	}
}

// dropRestored forgets the checkpoint entries of pods not in desired (gone
// while the agent was down) and checkpoints what is left.
func (m *Manager) dropRestored(ctx context.Context, desired map[types.UID]bool) {
	m.mu.Lock()
	for uid := range m.resize.restored {
		if !desired[uid] {
			delete(m.resize.restored, uid)
		}
	}
	m.mu.Unlock()
	m.saveAllocations(ctx)
}

// resizeView is what the status reports of the pod's resize: the
// allocation, the resources of each running instance, the conditions.
func (m *Manager) resizeView(pod *v1.Pod) (podactions.Allocation, map[string]v1.ResourceRequirements, []v1.PodCondition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.resize.allocated[pod.UID]
	if !ok {
		p = pod
	}
	actuated := make(map[string]v1.ResourceRequirements, len(m.resize.actuated[pod.UID]))
	for id, r := range m.resize.actuated[pod.UID] {
		actuated[id] = r
	}
	return podactions.AllocationOf(p), actuated, append([]v1.PodCondition(nil), m.resize.conditions[pod.UID]...)
}

func findCondition(cs []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

func withCondition(cs []v1.PodCondition, c v1.PodCondition) []v1.PodCondition {
	out := withoutCondition(cs, c.Type)
	c.LastProbeTime = metav1.Time{}
	return append(out, c)
}

func withoutCondition(cs []v1.PodCondition, t v1.PodConditionType) []v1.PodCondition {
	var out []v1.PodCondition
	for _, c := range cs {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}
