package podsync

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/podactions"
	"github.com/kite-project/kite/agent/podruntime"
	"github.com/kite-project/kite/agent/podstatus"
	"github.com/kite-project/kite/agent/prober"
	"github.com/kite-project/kite/agent/runtime"
)

// minimumGracePeriod is the shortest stop timeout, as kuberuntime's
// minimumGracePeriodInSeconds: SIGTERM to SIGKILL is never shorter.
const minimumGracePeriod = 2

// backOffError is a start held back by the crash-loop back-off.
type backOffError struct {
	wait time.Duration
	msg  string
}

func (e *backOffError) Error() string { return e.msg }

// podName is upstream's format.Pod: name_namespace(uid).
func podName(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

func (m *Manager) setWaiting(pod *v1.Pod, container, reason, message string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.waiting[pod.UID]
	if w == nil {
		w = map[string]podstatus.Waiting{}
		m.waiting[pod.UID] = w
	}
	w[container] = podstatus.Waiting{Reason: reason, Message: message}
}

func (m *Manager) clearWaiting(pod *v1.Pod, container string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.waiting[pod.UID], container)
}

func (m *Manager) backOffOf(pod *v1.Pod) *podactions.BackOff {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.backOff[pod.UID]
	if b == nil {
		b = &podactions.BackOff{Initial: m.opts.BackOffInitial, Max: m.opts.BackOffMax}
		m.backOff[pod.UID] = b
	}
	return b
}

// startContainer starts the container's next instance, as kuberuntime's
// start and startContainer: the crash-loop back-off, the config (a
// failure is CreateContainerConfigError), create, start, postStart. Each
// failure is recorded as the container's Waiting reason and an event.
func (m *Manager) startContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, rt *podruntime.Pod, sandboxID string, sb *runtimeapi.PodSandboxConfig, volumes map[string]string) error {
	return m.startContainerTargeting(ctx, pod, c, "", rt, sandboxID, sb, volumes)
}

// startContainerTargeting is startContainer for a container that shares
// the process namespace of the pod's container target (an ephemeral
// container's targetContainerName; "" for none).
func (m *Manager) startContainerTargeting(ctx context.Context, pod *v1.Pod, c *v1.Container, target string, rt *podruntime.Pod, sandboxID string, sb *runtimeapi.PodSandboxConfig, volumes map[string]string) error {
	// Only the pod's worker uses its back-off.
	var lastExited *podruntime.Container
	for _, inst := range rt.Instances(c.Name) {
		if inst.State == podruntime.Exited {
			lastExited = inst
			break
		}
	}
	if lastExited != nil {
		b := m.backOffOf(pod)
		key := podactions.Key(pod, c)
		if wait, blocked := b.Check(key, lastExited.FinishedAt, time.Now()); blocked {
			m.events.ContainerEventf(pod, c.Name, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, podName(pod))
			msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", b.Delay(key), c.Name, podName(pod))
			m.setWaiting(pod, c.Name, podstatus.ReasonCrashLoopBackOff, msg)
			return &backOffError{wait: wait, msg: msg}
		}
	}
	// An instance left CREATED (its start never reported: it timed out,
	// or the agent restarted while a supervisor started it) is removed
	// before another is made. The runtime stops it first if its start
	// was recorded after all, so two instances never run (invariant 6).
	for _, inst := range rt.Instances(c.Name) {
		if inst.State == podruntime.Created {
			if err := m.rt.RemoveContainer(ctx, inst.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				return fmt.Errorf("remove container %s (%s) of pod %s/%s left created: %w", c.Name, inst.ID, pod.Namespace, pod.Name, err)
			}
		}
	}
	restartCount := m.volumes.NextRestartCount(pod, c.Name, rt.Find(c.Name))
	fail := func(reason string, err error) error {
		m.events.ContainerEventf(pod, c.Name, v1.EventTypeWarning, "Failed", "Error: %v", err)
		m.setWaiting(pod, c.Name, reason, err.Error())
		return fmt.Errorf("start container %s of pod %s/%s: %s: %w", c.Name, pod.Namespace, pod.Name, reason, err)
	}
	// Image volumes first: the kubelet fails a container whose image
	// volume is not there before it pulls the container's own image.
	volumes, err := m.imageVolumes(ctx, pod, c, sb, volumes)
	if err != nil {
		var ve *volumeError
		if errors.As(err, &ve) {
			return fail(podstatus.ReasonCreateContainerError, ve.err)
		}
		reason, msg := imageReason(err)
		m.events.ContainerEventf(pod, c.Name, v1.EventTypeWarning, "Failed", "Error: %s", reason)
		m.setWaiting(pod, c.Name, reason, msg)
		return fmt.Errorf("start container %s of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
	}
	imgUser, err := m.ensureImage(ctx, pod, c, sb)
	if err != nil {
		// The image manager's events are sent; the kubelet adds "Error:
		// <reason>" and waits with the reason and its message.
		reason, msg := imageReason(err)
		m.events.ContainerEventf(pod, c.Name, v1.EventTypeWarning, "Failed", "Error: %s", reason)
		m.setWaiting(pod, c.Name, reason, msg)
		return fmt.Errorf("start container %s of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
	}
	cfg, err := m.volumes.ContainerConfig(ctx, pod, c, restartCount, volumes, imgUser, rt.IPs)
	if err != nil {
		return fail(podstatus.ReasonCreateContainerConfigError, err)
	}
	if target != "" {
		if err := targetNamespaces(cfg, pod, target, rt); err != nil {
			return fail(podstatus.ReasonCreateContainerConfigError, err)
		}
	}
	id, err := m.rt.CreateContainer(ctx, sandboxID, cfg, sb)
	if err != nil {
		return fail(podstatus.ReasonCreateContainerError, err)
	}
	m.events.ContainerEventf(pod, c.Name, v1.EventTypeNormal, "Created", "Container created")
	if err := m.rt.StartContainer(ctx, id); err != nil {
		return fail(podstatus.ReasonRunContainerError, err)
	}
	m.events.ContainerEventf(pod, c.Name, v1.EventTypeNormal, "Started", "Container started")
	m.setActuated(pod.UID, id, c.Resources)
	m.saveAllocations(ctx)
	m.clearWaiting(pod, c.Name)
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		if msg, err := m.runHook(ctx, pod, c, id, c.Lifecycle.PostStart, 0); err != nil {
			m.events.ContainerEventf(pod, c.Name, v1.EventTypeWarning, "FailedPostStartHook", "%s", msg)
			m.killContainer(ctx, pod, c, id, "FailedPostStartHook", nil)
			m.setWaiting(pod, c.Name, "PostStartHookError", msg)
			return fmt.Errorf("postStart hook of container %s: %w", c.Name, err)
		}
	}
	return nil
}

// killPod stops every container of the pod that has not exited, the app
// containers in parallel and then the sidecars, and stops its sandboxes.
// A CREATED instance is stopped too: its start may be under way in a
// supervisor and run the command later (invariant 6).
func (m *Manager) killPod(ctx context.Context, pod *v1.Pod, rt *podruntime.Pod, grace *int64) error {
	var mains, sidecars []*podruntime.Container
	for _, c := range rt.Containers {
		if c.State == podruntime.Exited {
			continue
		}
		if c.State == podruntime.Created {
			// Nothing ran yet: no Killing event, no preStop.
			if err := m.rt.StopContainer(ctx, c.ID, minimumGracePeriod); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				return fmt.Errorf("stop container %s (%s) of pod %s/%s left created: %w", c.Name, c.ID, pod.Namespace, pod.Name, err)
			}
			continue
		}
		if spec := specOf(pod, c.Name); spec != nil && podactions.IsSidecar(spec) {
			sidecars = append(sidecars, c)
		} else {
			mains = append(mains, c)
		}
	}
	var errs []error
	for _, group := range [][]*podruntime.Container{mains, sidecars} {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range group {
			wg.Go(func() {
				if err := m.killContainer(ctx, pod, specOf(pod, c.Name), c.ID, "", grace); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, s := range rt.Sandboxes {
		if s.Ready {
			if err := m.rt.StopPodSandbox(ctx, s.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				return fmt.Errorf("stop sandbox %s of pod %s/%s: %w", s.ID, pod.Namespace, pod.Name, err)
			}
		}
	}
	return nil
}

// killContainer stops one container instance, as kuberuntime's
// killContainer: the Killing event, the preStop hook within the grace
// period, then StopContainer with what is left of it, at least 2 s.
func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, id, message string, override *int64) error {
	grace := int64(minimumGracePeriod)
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		grace = *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if override != nil {
		grace = *override
	}
	name := id
	if c != nil {
		name = c.Name
	}
	if message == "" {
		message = "Stopping container " + name
	}
	m.events.ContainerEventf(pod, name, v1.EventTypeNormal, "Killing", "%s", message)
	if c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
		start := time.Now()
		if msg, err := m.runHook(ctx, pod, c, id, c.Lifecycle.PreStop, time.Duration(grace)*time.Second); err != nil {
			m.events.ContainerEventf(pod, name, v1.EventTypeWarning, "FailedPreStopHook", "%s", msg)
		}
		grace -= int64(time.Since(start).Seconds())
	}
	grace = max(grace, minimumGracePeriod)
	if err := m.rt.StopContainer(ctx, id, grace); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		return fmt.Errorf("stop container %s of pod %s/%s: %w", name, pod.Namespace, pod.Name, err)
	}
	return nil
}

// runHook runs a lifecycle handler (exec, httpGet, sleep), bounded by
// timeout when positive; it returns the event message of a failure, as
// upstream's handler runner words it.
func (m *Manager) runHook(ctx context.Context, pod *v1.Pod, c *v1.Container, id string, h *v1.LifecycleHandler, timeout time.Duration) (string, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	switch {
	case h.Exec != nil:
		res, err := m.rt.ExecSync(ctx, id, h.Exec.Command, timeout)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("command %q exited with %d: %s", h.Exec.Command, res.ExitCode, append(res.Stdout, res.Stderr...))
		}
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v", h.Exec.Command, c.Name, podName(pod), err), err
		}
	case h.HTTPGet != nil:
		if err := m.httpHook(ctx, c, h.HTTPGet, m.hookHost(ctx, pod)); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podName(pod), err), err
		}
	case h.Sleep != nil:
		select {
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
		case <-ctx.Done():
		}
	}
	return "", nil
}

// hookHost is where an HTTP hook without a host goes: the pod's own
// address (its sandbox's), as the kubelet's handler runner asks the
// runtime for it; the node's for a pod on the node's network.
func (m *Manager) hookHost(ctx context.Context, pod *v1.Pod) string {
	if m.opts.PodNetwork && !pod.Spec.HostNetwork {
		if rt, err := m.runtimePod(ctx, pod); err == nil && len(rt.IPs) > 0 {
			return rt.IPs[0]
		}
	}
	if host := first(m.opts.HostIPs); host != "" {
		return host
	}
	return "127.0.0.1"
}

// httpHook sends the hook's GET to its host, or to podHost without one.
func (m *Manager) httpHook(ctx context.Context, c *v1.Container, g *v1.HTTPGetAction, podHost string) error {
	host := g.Host
	if host == "" {
		host = podHost
	}
	port, err := resolvePort(g.Port, c)
	if err != nil {
		return err
	}
	scheme := "http"
	if g.Scheme == v1.URISchemeHTTPS {
		scheme = "https"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+net.JoinHostPort(host, strconv.Itoa(port))+g.Path, nil)
	if err != nil {
		return err
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := m.hooks.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

func resolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("couldn't find port: %v in %v", p.StrVal, c.Ports)
}

// probeKillGrace is the grace of a kill for a failed probe.
func probeKillGrace(pod *v1.Pod, c *v1.Container, reason podactions.KillReason) int64 {
	if c == nil {
		return minimumGracePeriod
	}
	t := prober.Liveness
	if reason == podactions.ReasonStartupProbe {
		t = prober.Startup
	}
	return prober.KillGracePeriod(pod, c, t)
}
