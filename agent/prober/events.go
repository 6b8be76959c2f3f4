package prober

import (
	v1 "k8s.io/api/core/v1"
)

// EventRecorder records an event about a pod, as client-go's
// record.EventRecorder does. Eventf must not block: workers call it
// between checks.
type EventRecorder interface {
	Eventf(pod *v1.Pod, eventtype, reason, messageFmt string, args ...any)
}

// ContainerEventRecorder is an EventRecorder that can also say which
// container an event is about (involvedObject.fieldPath
// "spec.containers{name}"), as upstream's probe events do. When the
// Manager's recorder has it, probe events use it.
type ContainerEventRecorder interface {
	ContainerEventf(pod *v1.Pod, container, eventtype, reason, messageFmt string, args ...any)
}

// Event reasons, as upstream's kubelet writes them (pkg/kubelet/events).
const (
	// ReasonUnhealthy is a check that failed or could not be made.
	ReasonUnhealthy = "Unhealthy"
	// ReasonProbeWarning is a check that passed with a warning.
	ReasonProbeWarning = "ProbeWarning"
	// ReasonKilling is the event of a container being stopped; the pod
	// worker records it with KillMessage when it acts on a probe.
	ReasonKilling = "Killing"
)

// Kill reasons, as kuberuntime names why it kills a container.
const (
	KillReasonLivenessProbe = "LivenessProbe"
	KillReasonStartupProbe  = "StartupProbe"
)

// KillMessage is the message of the Killing event for a container killed
// because its liveness or startup probe failed: "Container c failed
// liveness probe, will be restarted", without the last part when the
// restart policy does not restart it.
func KillMessage(container string, t Type, willRestart bool) string {
	kind := "liveness"
	if t == Startup {
		kind = "startup"
	}
	msg := "Container " + container + " failed " + kind + " probe"
	if willRestart {
		msg += ", will be restarted"
	}
	return msg
}

// KillReason is KillReasonLivenessProbe or KillReasonStartupProbe.
func KillReason(t Type) string {
	if t == Startup {
		return KillReasonStartupProbe
	}
	return KillReasonLivenessProbe
}

// KillGracePeriod is the grace period for killing a container whose
// probe of type t failed: the probe's terminationGracePeriodSeconds when
// set, else the pod's (30 s when unset), as upstream.
func KillGracePeriod(pod *v1.Pod, c *v1.Container, t Type) int64 {
	var spec *v1.Probe
	switch t {
	case Liveness:
		spec = c.LivenessProbe
	case Startup:
		spec = c.StartupProbe
	}
	if spec != nil && spec.TerminationGracePeriodSeconds != nil {
		return *spec.TerminationGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return v1.DefaultTerminationGracePeriodSeconds
}

// recordOutcome writes the event upstream's prober writes for one probe
// run: Unhealthy for a failure or an error, ProbeWarning for a warning,
// nothing for a success.
func recordOutcome(rec EventRecorder, pod *v1.Pod, container string, t Type, o Outcome, output string, err error) {
	eventf := rec.Eventf
	if cr, ok := rec.(ContainerEventRecorder); ok {
		eventf = func(pod *v1.Pod, eventtype, reason, messageFmt string, args ...any) {
			cr.ContainerEventf(pod, container, eventtype, reason, messageFmt, args...)
		}
	}
	switch {
	case err != nil:
		eventf(pod, v1.EventTypeWarning, ReasonUnhealthy, "%s probe errored and resulted in %s state: %s", t, "unknown", err)
	case o == OutcomeFailure:
		eventf(pod, v1.EventTypeWarning, ReasonUnhealthy, "%s probe failed: %s", t, output)
	case o == OutcomeWarning:
		eventf(pod, v1.EventTypeWarning, ReasonProbeWarning, "%s probe warning: %s", t, output)
	}
}
