package podsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/podactions"
	"github.com/kite-project/kite/agent/podruntime"
	"github.com/kite-project/kite/agent/podstatus"
	"github.com/kite-project/kite/agent/podworkers"
	"github.com/kite-project/kite/agent/runtime"
)

var _ podworkers.Syncer = (*Manager)(nil)

// generate computes the pod's status from the runtime's view.
func (m *Manager) generate(pod *v1.Pod, rt *podruntime.Pod, terminal bool) v1.PodStatus {
	old := pod.Status
	if m.status != nil {
		if s, ok := m.status.Status(pod.UID); ok {
			old = s
		}
	}
	m.mu.Lock()
	if m.status == nil {
		if s, ok := m.last[pod.UID]; ok {
			old = s
		}
	}
	waiting := make(map[string]podstatus.Waiting, len(m.waiting[pod.UID]))
	for k, v := range m.waiting[pod.UID] {
		waiting[k] = v
	}
	m.mu.Unlock()
	alloc, actuated, resizeConditions := m.resizeView(pod)
	return podstatus.Generate(podstatus.Input{Pod: pod, Runtime: rt, Old: old, Waiting: waiting, Probes: m.probes,
		Allocation: alloc, Actuated: actuated, ResizeConditions: resizeConditions,
		HostIPs: m.opts.HostIPs, PodNetwork: m.opts.PodNetwork, RuntimeName: m.runtimeName, Terminal: terminal, Now: time.Now(),
		StartHold: m.startHold()})
}

// startHold is how long a stdin-once container's start goes unreported
// (podstatus.StartHold): the relist period, the kubelet's PLEG's.
func (m *Manager) startHold() time.Duration {
	return orDefault(m.opts.RelistPeriod, DefaultRelistPeriod)
}

// setStatus hands the status to the status manager and the prober.
func (m *Manager) setStatus(pod *v1.Pod, s v1.PodStatus) {
	if m.status != nil {
		m.status.SetPodStatus(pod, s)
	} else {
		m.mu.Lock()
		m.last[pod.UID] = s
		m.mu.Unlock()
	}
	if m.prober != nil {
		m.prober.UpdatePod(pod, s)
	}
}

// SyncPod brings the pod's containers towards its spec, as the kubelet's
// SyncPod and kuberuntime's SyncPod: status first (a terminal phase ends
// here), then the volumes, then the actions podactions.Compute decides.
func (m *Manager) SyncPod(ctx context.Context, pod *v1.Pod) (podworkers.SyncResult, error) {
	// The resize first, as the kubelet's handlePodResourcesResize: the
	// status of this generation then says PodResizeInProgress (or
	// Pending) until the new resources are actuated. New instances start
	// with what was allocated, which a pending resize leaves behind the
	// spec.
	allocated := m.allocate(ctx, pod)
	rt, err := m.runtimePod(ctx, pod)
	if err != nil {
		return podworkers.SyncResult{}, err
	}
	st := m.generate(pod, rt, false)
	var start *time.Time
	if st.StartTime != nil {
		start = &st.StartTime.Time
	}
	deadline, exceeded := podstatus.ActiveDeadline(pod, start, time.Now())
	if exceeded && st.Phase != v1.PodSucceeded && st.Phase != v1.PodFailed {
		m.events.Eventf(pod, v1.EventTypeNormal, podstatus.ReasonDeadlineExceeded, "%s", podstatus.MessageDeadlineExceeded)
		st = podstatus.ExceedDeadline(st)
	}
	m.setStatus(pod, st)
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		return podworkers.SyncResult{Terminal: true}, nil
	}
	volumes, err := m.volumes.SetUp(ctx, pod)
	if err != nil {
		m.events.Eventf(pod, v1.EventTypeWarning, "FailedMount", "%s", err.Error())
		return podworkers.SyncResult{}, err
	}
	actions := podactions.Compute(pod, rt, m.probes)
	m.removeDead(ctx, rt)

	if actions.KillPod {
		if err := m.killPod(ctx, pod, rt, nil); err != nil {
			return podworkers.SyncResult{}, err
		}
		if !actions.CreateSandbox {
			// Nothing left to run: the next status should be terminal.
			// A second, not at once, so that a pod that is not never
			// spins.
			return podworkers.SyncResult{RequeueAfter: time.Second}, nil
		}
		if actions.Attempt > 0 {
			m.events.Eventf(pod, v1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
		}
	}
	for id, k := range actions.ContainersToKill {
		c := specOf(pod, k.Name)
		var grace *int64
		if k.Reason == podactions.ReasonLivenessProbe || k.Reason == podactions.ReasonStartupProbe {
			g := probeKillGrace(pod, c, k.Reason)
			grace = &g
		}
		if err := m.killContainer(ctx, pod, c, id, k.Message, grace); err != nil {
			return podworkers.SyncResult{}, err
		}
	}

	sandboxID := actions.SandboxID
	sbConfig := m.volumes.SandboxConfig(pod, actions.Attempt)
	m.podCgroupParent(allocated, &sbConfig.Linux.CgroupParent)
	m.podActive(ctx, allocated, actions.CreateSandbox)
	if actions.CreateSandbox {
		for _, w := range m.volumes.DNSWarnings(pod) {
			m.events.Eventf(pod, v1.EventTypeWarning, w.Reason, "%s", w.Message)
		}
		// The handler of the pod's RuntimeClass, as the kubelet's
		// createPodSandbox: a class that does not exist fails the
		// sandbox as one the runtime refuses does.
		handler, err := m.runtimeHandler(ctx, pod)
		if err == nil {
			sandboxID, err = m.rt.RunPodSandbox(ctx, sbConfig, handler)
		}
		if err != nil {
			// The runtime's own error, as the kubelet's event has it
			// (`rpc error: code = Unknown desc = failed to get sandbox
			// runtime: no runtime for "nope" is configured`).
			m.events.Eventf(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", runtime.RuntimeError(err))
			return podworkers.SyncResult{}, fmt.Errorf("create sandbox of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		rt = &podruntime.Pod{UID: pod.UID} // a new sandbox starts afresh
		if err := m.limitNewSandbox(ctx, allocated, sandboxID); err != nil {
			return podworkers.SyncResult{}, err
		}
		if m.opts.PodNetwork {
			// Its addresses, for the downward API (the kubelet's
			// podIPs after createPodSandbox).
			st, err := m.rt.PodSandboxStatus(ctx, sandboxID)
			if err != nil {
				return podworkers.SyncResult{}, fmt.Errorf("status of the new sandbox of pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
			rt.IPs = sandboxIPs(st)
		}
	}

	var wait time.Duration
	var errs []error
	note := func(err error) {
		var b *backOffError
		if errors.As(err, &b) {
			if wait == 0 || b.wait < wait {
				wait = b.wait
			}
			return
		}
		errs = append(errs, err)
	}
	// Ephemeral containers first, as the kubelet's step 7: one may debug
	// an init container that keeps failing.
	for _, i := range actions.EphemeralContainersToStart {
		ec := &pod.Spec.EphemeralContainers[i]
		target := ec.TargetContainerName
		if pod.Spec.HostPID || (pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace) {
			// Already in a process namespace with the target, as the
			// kubelet's NamespacesForPod targets only a container's own.
			target = ""
		}
		if err := m.startContainerTargeting(ctx, pod, (*v1.Container)(&ec.EphemeralContainerCommon), target, rt, sandboxID, sbConfig, volumes); err != nil {
			note(err)
		}
	}
	for _, i := range actions.InitContainersToStart {
		c := &allocated.Spec.InitContainers[i]
		if err := m.startContainer(ctx, allocated, c, rt, sandboxID, sbConfig, volumes); err != nil {
			note(err)
			if !podactions.IsSidecar(c) {
				break // the next init container waits for this one
			}
		}
	}
	for _, i := range actions.ContainersToStart {
		if err := m.startContainer(ctx, allocated, &allocated.Spec.Containers[i], rt, sandboxID, sbConfig, volumes); err != nil {
			note(err)
		}
	}
	// Whether this sync changed anything in the runtime: a sync with
	// nothing to do (most of them: the relist's, the prober's) reports from
	// what it read at its start rather than read the pod's sandboxes and
	// containers again, which a node starting many pods at once pays for
	// in its runtime's CPU.
	changed := actions.KillPod || actions.CreateSandbox || len(actions.ContainersToKill) > 0 ||
		len(actions.EphemeralContainersToStart)+len(actions.InitContainersToStart)+len(actions.ContainersToStart) > 0
	if !actions.CreateSandbox {
		before := m.actuatedOf(pod.UID)
		m.actuate(ctx, allocated, rt, func(c *v1.Container) error {
			changed = true
			return m.startContainer(ctx, allocated, c, rt, sandboxID, sbConfig, volumes)
		})
		changed = changed || !maps.EqualFunc(before, m.actuatedOf(pod.UID), func(a, b v1.ResourceRequirements) bool {
			return apiequality.Semantic.DeepEqual(a, b)
		})
	}
	// Report what was started without waiting for the next relist.
	if !changed {
		m.setStatus(pod, m.generate(pod, rt, false))
	} else if rt2, err := m.runtimePod(ctx, pod); err == nil {
		rt = rt2
		m.setStatus(pod, m.generate(pod, rt, false))
	}
	if deadline > 0 && (wait == 0 || deadline < wait) {
		wait = deadline // sync when the active deadline passes
	}
	// A stdin-once container whose start the status holds back is
	// reported running when the hold ends: nothing in the runtime changes
	// then for the relist to see, so the pod is synced at that moment.
	res := podworkers.SyncResult{RequeueAfter: wait, StatusDue: podstatus.NextStart(pod, rt, time.Now(), m.startHold())}
	if len(errs) > 0 {
		return res, errors.Join(errs...)
	}
	return res, nil
}

// SyncTerminatingPod stops every container of the pod within grace
// seconds and stops its sandboxes; it fails while anything still runs.
func (m *Manager) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, grace int64) error {
	rt, err := m.runtimePod(ctx, pod)
	if err != nil {
		return err
	}
	m.setStatus(pod, m.generate(pod, rt, false))
	if err := m.killPod(ctx, pod, rt, &grace); err != nil {
		return err
	}
	m.podInactive(ctx, pod.UID)
	if rt, err = m.runtimePod(ctx, pod); err != nil {
		return err
	}
	if running := rt.Running(); len(running) > 0 {
		return fmt.Errorf("pod %s/%s: %d containers still run after they were stopped", pod.Namespace, pod.Name, len(running))
	}
	m.setStatus(pod, m.generate(pod, rt, true))
	if m.prober != nil {
		m.prober.RemovePod(pod.UID)
	}
	return nil
}

// SyncTerminatedPod reports the pod's final status; the status manager
// then completes an API deletion. Its runtime remains (exit codes, logs)
// until no source has the pod.
func (m *Manager) SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error {
	rt, err := m.runtimePod(ctx, pod)
	if err != nil {
		return err
	}
	final := m.generate(pod, rt, true)
	if m.status != nil {
		m.status.TerminatePod(pod, final)
	} else {
		// Not setStatus: the prober must not take the pod back.
		m.mu.Lock()
		m.last[pod.UID] = final
		m.mu.Unlock()
	}
	klog.FromContext(ctx).V(2).Info("Pod terminated", "pod", klog.KObj(pod), "phase", final.Phase)
	return nil
}

// removeDead removes exited instances older than the last two of each
// container: the newest is the state, the one before it lastState.
func (m *Manager) removeDead(ctx context.Context, rt *podruntime.Pod) {
	seen := map[string]int{}
	for _, c := range rt.Containers {
		seen[c.Name]++
		if seen[c.Name] > 2 && c.State == podruntime.Exited {
			m.rt.RemoveContainer(ctx, c.ID)
		}
	}
}

// actuatedOf is a copy of the resources actuated for each container
// instance of the pod: an in-place resize (actuate) changes them when it
// updates a container's resources in the runtime.
func (m *Manager) actuatedOf(uid types.UID) map[string]v1.ResourceRequirements {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.resize.actuated[uid])
}

func specOf(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}
