// Package podactions decides what the agent does to bring a pod's
// containers in the runtime to its spec: whether a sandbox is needed,
// which init containers and app containers to start, which containers to
// kill, and whether to kill the whole pod. It is upstream's
// computePodActions (pkg/kubelet/kuberuntime/kuberuntime_manager.go) and
// ShouldContainerBeRestarted, as pure functions of the pod, what the
// runtime has of it and the probe results; package podsync carries the
// actions out. The crash-loop back-off is here too (BackOff), as a value
// the pod's worker owns.
package podactions

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/agent/podruntime"
)

// KillReason says why a running container is killed, as upstream's
// containerKillReason.
type KillReason string

const (
	ReasonNone          KillReason = ""
	ReasonStartupProbe  KillReason = "StartupProbe"
	ReasonLivenessProbe KillReason = "LivenessProbe"
	ReasonUnknown       KillReason = "Unknown"
)

// Kill is a container to kill and why.
type Kill struct {
	// Name is the container's name; ID its runtime instance.
	Name, ID string
	// Message is the Killing event's message: "Container c definition
	// changed", "Container c failed liveness probe, will be restarted".
	Message string
	Reason  KillReason
}

// Actions is what one sync does to a pod.
type Actions struct {
	// KillPod: stop every container and the sandbox (before creating a new
	// sandbox, or because nothing is left to run).
	KillPod bool
	// CreateSandbox: run a new sandbox, with Attempt; SandboxID is the
	// current one when it is kept.
	CreateSandbox bool
	SandboxID     string
	Attempt       uint32
	// InitContainersToStart are indexes into spec.initContainers, in spec
	// order.
	InitContainersToStart []int
	// ContainersToStart are indexes into spec.containers, in spec order.
	ContainersToStart []int
	// EphemeralContainersToStart are indexes into spec.ephemeralContainers
	// of those that never ran: they start once, never again.
	EphemeralContainersToStart []int
	// ContainersToKill are running containers to stop, by instance ID.
	ContainersToKill map[string]Kill
}

// Probes are the current probe results of running containers, by
// container instance ID. A result not present has not been determined.
type Probes interface {
	// Liveness and Startup give (failed, known).
	Liveness(containerID string) (failed, known bool)
	Startup(containerID string) (succeeded, failed, known bool)
}

// NoProbes is Probes without any prober: nothing ever fails, a startup
// probe counts as succeeded.
type NoProbes struct{}

func (NoProbes) Liveness(string) (bool, bool)      { return false, false }
func (NoProbes) Startup(string) (bool, bool, bool) { return true, false, true }

// Compute is the pod's actions, as upstream's computePodActions.
func Compute(pod *v1.Pod, status *podruntime.Pod, probes Probes) Actions {
	if probes == nil {
		probes = NoProbes{}
	}
	createSandbox, attempt, sandboxID := SandboxChanged(status)
	a := Actions{KillPod: createSandbox, CreateSandbox: createSandbox, SandboxID: sandboxID, Attempt: attempt, ContainersToKill: map[string]Kill{}}

	if createSandbox {
		// A pod that may not restart (Never) and has run before is not
		// given a new sandbox: it is done.
		if !restartOnFailure(pod) && attempt != 0 && len(status.Containers) != 0 {
			a.CreateSandbox = false
			return a
		}
		var start []int
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure && succeeded(c, status) {
				continue
			}
			start = append(start, i)
		}
		if len(start) == 0 && anyRegularCreated(pod, status) {
			// Initialized before and nothing to start: no new sandbox.
			a.CreateSandbox = false
			return a
		}
		if len(pod.Spec.InitContainers) != 0 {
			a.InitContainersToStart = []int{0}
			return a
		}
		a.ContainersToStart = start
		return a
	}

	// Ephemeral containers may start before the pod is initialized
	// (upstream: so that one can debug an init container that fails).
	for i := range pod.Spec.EphemeralContainers {
		if status.Find(pod.Spec.EphemeralContainers[i].Name) == nil {
			a.EphemeralContainersToStart = append(a.EphemeralContainersToStart, i)
		}
	}
	initialized := initActions(pod, status, probes, &a)
	if a.KillPod || !initialized {
		return a
	}

	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := status.Find(c.Name)
		if cs == nil || cs.State != podruntime.Running {
			if ShouldRestart(c, pod, status) {
				a.ContainersToStart = append(a.ContainersToStart, i)
				if cs != nil && cs.State == podruntime.Unknown {
					// It may still run: kill it first, so that two
					// instances never run together.
					a.ContainersToKill[cs.ID] = Kill{Name: c.Name, ID: cs.ID, Reason: ReasonUnknown,
						Message: fmt.Sprintf("Container is in %q state, try killing it before restart", cs.State)}
				}
			}
			continue
		}
		var msg string
		var reason KillReason
		restart := containerMayRestart(c, pod)
		if cs.Hash != "" && cs.Hash != podruntime.HashContainer(c) {
			msg = fmt.Sprintf("Container %s definition changed", c.Name)
			restart = true
		} else if failed, _ := probes.Liveness(cs.ID); failed {
			msg, reason = fmt.Sprintf("Container %s failed liveness probe", c.Name), ReasonLivenessProbe
		} else if _, failed, _ := probes.Startup(cs.ID); failed && c.StartupProbe != nil {
			msg, reason = fmt.Sprintf("Container %s failed startup probe", c.Name), ReasonStartupProbe
		} else {
			keep++
			continue
		}
		if restart {
			msg += ", will be restarted"
			a.ContainersToStart = append(a.ContainersToStart, i)
		}
		a.ContainersToKill[cs.ID] = Kill{Name: c.Name, ID: cs.ID, Message: msg, Reason: reason}
	}
	if keep == 0 && len(a.ContainersToStart) == 0 {
		a.KillPod = true
		// Sidecars do not keep a finished pod alive.
		a.InitContainersToStart = nil
	}
	return a
}

// SandboxChanged says whether the pod needs a new sandbox, with the new
// sandbox's attempt and the current sandbox's ID, as upstream's
// PodSandboxChanged for a host-network pod (no IP to check).
func SandboxChanged(status *podruntime.Pod) (changed bool, attempt uint32, sandboxID string) {
	if status == nil || len(status.Sandboxes) == 0 {
		return true, 0, ""
	}
	ready := 0
	for _, s := range status.Sandboxes {
		if s.Ready {
			ready++
		}
	}
	newest := status.Sandboxes[0]
	if ready > 1 || !newest.Ready {
		return true, newest.Attempt + 1, newest.ID
	}
	return false, newest.Attempt, newest.ID
}

// initActions adds the init containers' actions to a and says whether the
// pod is initialized, as upstream's computeInitContainerActions: a reverse
// scan finds the furthest init container that progressed; the next starts
// only when it exited 0 or, for a sidecar, runs and has started.
func initActions(pod *v1.Pod, status *podruntime.Pod, probes Probes, a *Actions) bool {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return true
	}
	// A regular container created or running means the init containers
	// all ran once, even if the runtime has lost them since.
	initialized := false
	for i := range pod.Spec.Containers {
		if cs := status.Find(pod.Spec.Containers[i].Name); cs != nil && (cs.State == podruntime.Created || cs.State == podruntime.Running) {
			initialized = true
			break
		}
	}
	previouslyInitialized := initialized
	onFailure := restartOnFailure(pod)

	for i := len(inits) - 1; i >= 0; i-- {
		c := &inits[i]
		cs := status.Find(c.Name)
		sidecar := IsSidecar(c)
		if cs == nil {
			if previouslyInitialized && sidecar {
				a.InitContainersToStart = append(a.InitContainersToStart, i)
			}
			continue
		}
		if previouslyInitialized && !sidecar {
			continue
		}
		switch cs.State {
		case podruntime.Created:
			// Created but never started: start it again rather than
			// leave it stuck.
			a.InitContainersToStart = append(a.InitContainersToStart, i)
		case podruntime.Running:
			if !sidecar {
				break
			}
			if c.StartupProbe != nil {
				ok, failed, known := probes.Startup(cs.ID)
				if !known {
					break
				}
				if !ok {
					if failed {
						a.ContainersToKill[cs.ID] = Kill{Name: c.Name, ID: cs.ID, Reason: ReasonStartupProbe, Message: fmt.Sprintf("Init container %s failed startup probe", c.Name)}
						a.InitContainersToStart = append(a.InitContainersToStart, i)
					}
					break
				}
			}
			if i == len(inits)-1 {
				initialized = true
			} else if !previouslyInitialized {
				a.InitContainersToStart = append(a.InitContainersToStart, i+1)
			}
			if cs.Hash != "" && cs.Hash != podruntime.HashContainer(c) {
				a.ContainersToKill[cs.ID] = Kill{Name: c.Name, ID: cs.ID, Message: fmt.Sprintf("Init container %s definition changed", c.Name)}
				a.InitContainersToStart = append(a.InitContainersToStart, i)
				break
			}
			if c.LivenessProbe != nil {
				if failed, _ := probes.Liveness(cs.ID); failed {
					a.ContainersToKill[cs.ID] = Kill{Name: c.Name, ID: cs.ID, Reason: ReasonLivenessProbe, Message: fmt.Sprintf("Init container %s failed liveness probe", c.Name)}
					a.InitContainersToStart = append(a.InitContainersToStart, i)
				}
			}
		case podruntime.Exited:
			if sidecar {
				a.InitContainersToStart = append(a.InitContainersToStart, i)
				break
			}
			if initFailed(cs) {
				if !onFailure {
					a.KillPod = true
					a.InitContainersToStart = nil
					return false
				}
				a.InitContainersToStart = append(a.InitContainersToStart, i)
				break
			}
			if i == len(inits)-1 {
				initialized = true
			} else {
				a.InitContainersToStart = append(a.InitContainersToStart, i+1)
			}
		default:
			if !sidecar && !onFailure {
				a.KillPod = true
				a.InitContainersToStart = nil
				return false
			}
			prefix := "Init container"
			a.ContainersToKill[cs.ID] = Kill{Name: c.Name, ID: cs.ID, Reason: ReasonUnknown,
				Message: fmt.Sprintf("%s is in %q state, try killing it before restart", prefix, cs.State)}
			a.InitContainersToStart = append(a.InitContainersToStart, i)
		}
		previouslyInitialized = true
	}
	if !previouslyInitialized {
		a.InitContainersToStart = append(a.InitContainersToStart, 0)
	}
	s := a.InitContainersToStart
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
	return initialized
}

// ShouldRestart says whether a container that is not running should be
// started (again), as upstream's ShouldContainerBeRestarted with the
// container-level restartPolicy and restartPolicyRules.
func ShouldRestart(c *v1.Container, pod *v1.Pod, status *podruntime.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	cs := status.Find(c.Name)
	if cs == nil {
		return true
	}
	switch cs.State {
	case podruntime.Running:
		return false
	case podruntime.Unknown, podruntime.Created:
		return true
	}
	return RestartAfterExit(c, pod, cs.ExitCode)
}

// RestartAfterExit says whether the policy restarts c after it exited with
// code: the container's restartPolicyRules first, then its restartPolicy,
// then the pod's.
func RestartAfterExit(c *v1.Container, pod *v1.Pod, code int32) bool {
	for _, r := range c.RestartPolicyRules {
		if r.Action != v1.ContainerRestartRuleActionRestart || r.ExitCodes == nil {
			continue
		}
		in := false
		for _, v := range r.ExitCodes.Values {
			if v == code {
				in = true
			}
		}
		if (r.ExitCodes.Operator == v1.ContainerRestartRuleOnExitCodesOpIn) == in {
			return true
		}
	}
	switch policyOf(c, pod) {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return code != 0
	}
	return true
}

// policyOf is the restart policy that applies to c.
func policyOf(c *v1.Container, pod *v1.Pod) v1.RestartPolicy {
	if c.RestartPolicy != nil {
		return v1.RestartPolicy(*c.RestartPolicy)
	}
	return pod.Spec.RestartPolicy
}

// containerMayRestart says whether c is restarted after a probe kills it.
func containerMayRestart(c *v1.Container, pod *v1.Pod) bool {
	return policyOf(c, pod) != v1.RestartPolicyNever
}

func restartOnFailure(pod *v1.Pod) bool { return pod.Spec.RestartPolicy != v1.RestartPolicyNever }

// IsSidecar says whether an init container is a sidecar (restartPolicy
// Always).
func IsSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

func initFailed(cs *podruntime.Container) bool {
	return cs.State == podruntime.Exited && cs.ExitCode != 0 || cs.State == podruntime.Unknown || cs.Reason == "OOMKilled"
}

func succeeded(c *v1.Container, status *podruntime.Pod) bool {
	cs := status.Find(c.Name)
	return cs != nil && cs.State == podruntime.Exited && cs.ExitCode == 0
}

func anyRegularCreated(pod *v1.Pod, status *podruntime.Pod) bool {
	for i := range pod.Spec.Containers {
		if status.Find(pod.Spec.Containers[i].Name) != nil {
			return true
		}
	}
	return false
}
