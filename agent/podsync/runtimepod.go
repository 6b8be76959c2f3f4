package podsync

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/containerconfig"
	"github.com/kite-project/kite/agent/podruntime"
	"github.com/kite-project/kite/agent/runtime"
)

// runtimePod is what the runtime has of the pod: its sandboxes and every
// container instance, found by the pod UID label.
func (m *Manager) runtimePod(ctx context.Context, pod *v1.Pod) (*podruntime.Pod, error) {
	sel := map[string]string{runtime.LabelPodUID: string(pod.UID)}
	sandboxes, err := m.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list sandboxes of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	containers, err := m.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	statuses := make([]*runtimeapi.ContainerStatus, 0, len(containers))
	for _, c := range containers {
		s, err := m.rt.ContainerStatus(ctx, c.Id)
		if errors.Is(err, runtime.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("status of container %s: %w", c.Id, err)
		}
		if s.Labels == nil {
			s.Labels = c.Labels
		}
		if s.Annotations == nil {
			s.Annotations = c.Annotations
		}
		statuses = append(statuses, s)
	}
	rt := podruntime.FromCRI(pod.UID, pod.Name, pod.Namespace, sandboxes, statuses)
	if m.opts.PodNetwork && len(rt.Sandboxes) > 0 && rt.Sandboxes[0].Ready {
		st, err := m.rt.PodSandboxStatus(ctx, rt.Sandboxes[0].ID)
		switch {
		case errors.Is(err, runtime.ErrNotFound): // removed meanwhile
		case err != nil:
			return nil, fmt.Errorf("status of sandbox %s of pod %s/%s: %w", rt.Sandboxes[0].ID, pod.Namespace, pod.Name, err)
		default:
			rt.IPs = sandboxIPs(st)
		}
	}
	m.terminationMessages(pod, rt)
	return rt, nil
}

// sandboxIPs are the sandbox's addresses, the primary first, those that
// do not parse left out, as the kubelet's determinePodSandboxIPs.
func sandboxIPs(st *runtimeapi.PodSandboxStatus) []string {
	var ips []string
	if n := st.GetNetwork(); n != nil {
		for _, ip := range append([]string{n.GetIp()}, additional(n)...) {
			if _, err := netip.ParseAddr(ip); err == nil {
				ips = append(ips, ip)
			}
		}
	}
	return ips
}

func additional(n *runtimeapi.PodSandboxNetworkStatus) []string {
	var out []string
	for _, a := range n.GetAdditionalIps() {
		out = append(out, a.GetIp())
	}
	return out
}

// terminationMessages gives each exited container the kubelet's
// termination message (kuberuntime getTerminationMessage): the end of what
// it wrote to terminationMessagePath (the file the builder bound there, at
// most 4096 bytes), or, when that is empty, its policy is
// FallbackToLogsOnError and it failed, the tail of its log. A message of
// the runtime's own comes first, then ": ".
func (m *Manager) terminationMessages(pod *v1.Pod, rt *podruntime.Pod) {
	for _, c := range rt.Containers {
		if c.State != podruntime.Exited {
			continue
		}
		spec := specOf(pod, c.Name)
		if spec == nil {
			continue
		}
		msg := ""
		if spec.TerminationMessagePath != "" {
			msg = string(fileTail(m.volumes.TerminationMessageFile(pod, c.Name, c.RestartCount), maxTerminationMessage))
		}
		if msg == "" && spec.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError && c.ExitCode != 0 {
			msg = logTail(filepath.Join(m.volumes.LogDirectory(pod), containerconfig.LogPath(c.Name, c.RestartCount)))
		}
		switch {
		case msg == "":
		case c.Message == "":
			c.Message = msg
		default:
			c.Message += ": " + msg
		}
	}
}

// removeRuntimePod stops and removes everything the runtime has of a pod
// UID that no source has (grace 2 s, as the kubelet kills orphans with
// the minimum), and its directory.
func (m *Manager) removeRuntimePod(ctx context.Context, uid types.UID) error {
	sel := map[string]string{runtime.LabelPodUID: string(uid)}
	containers, err := m.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING || c.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
			if err := m.rt.StopContainer(ctx, c.Id, minimumGracePeriod); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	sandboxes, err := m.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return err
	}
	for _, s := range sandboxes {
		if err := m.rt.StopPodSandbox(ctx, s.Id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return err
		}
		if err := m.rt.RemovePodSandbox(ctx, s.Id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return err
		}
	}
	for _, c := range containers {
		if err := m.rt.RemoveContainer(ctx, c.Id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return err
		}
	}
	// The pod's directory, and the copies of image volumes it alone used.
	return m.volumes.RemovePodDir(&v1.Pod{ObjectMeta: metaUID(uid)})
}

func metaUID(uid types.UID) metav1.ObjectMeta { return metav1.ObjectMeta{UID: uid} }
