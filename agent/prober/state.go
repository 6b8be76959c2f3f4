package prober

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// Params are the parts of a probe spec that the state machine uses, with
// the API's defaults filled in.
type Params struct {
	Type             Type
	InitialDelay     time.Duration
	Period           time.Duration
	SuccessThreshold int
	FailureThreshold int
}

// ParamsFor reads spec's timing and thresholds; fields left zero (a pod
// not defaulted by an API server) get the API's defaults: period 10 s,
// thresholds 1 and 3.
func ParamsFor(t Type, spec *v1.Probe) Params {
	p := Params{
		Type:             t,
		InitialDelay:     time.Duration(spec.InitialDelaySeconds) * time.Second,
		Period:           time.Duration(spec.PeriodSeconds) * time.Second,
		SuccessThreshold: int(spec.SuccessThreshold),
		FailureThreshold: int(spec.FailureThreshold),
	}
	if p.Period <= 0 {
		p.Period = 10 * time.Second
	}
	if p.SuccessThreshold <= 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold <= 0 {
		p.FailureThreshold = 3
	}
	return p
}

// Observation is what a worker knows of its container at a tick.
type Observation struct {
	Now time.Time
	// ContainerID is the current instance's runtime ID; "" while there
	// is none.
	ContainerID string
	Running     bool
	StartedAt   time.Time
	// Exited: the instance has terminated; WillRestart: the agent will
	// start another one (restart policy, sidecar).
	Exited, WillRestart bool
	// Started: the startup probe has succeeded for this instance, or the
	// container has none.
	Started bool
	// Deleting: the pod has a deletionTimestamp.
	Deleting bool
	// Terminal: the pod has succeeded or failed.
	Terminal bool
}

// State is a worker's memory between ticks. The zero State is a worker
// that has seen no container yet.
type State struct {
	ContainerID string
	// OnHold: a verdict that ends this instance was published (liveness
	// failure, any startup verdict); nothing is probed until a new one.
	OnHold bool
	last   Result
	run    int
}

// Step is what the worker does after a tick or a check.
type Step struct {
	// Probe: run the check now, then pass its result to Record.
	Probe bool
	// Publish: set the container's result to Result.
	Publish bool
	Result  Result
	// Stop: the worker has nothing more to do for this pod.
	Stop bool
}

// Tick decides what a worker does at one tick, following upstream's
// doProbe: a terminal pod stops the worker; a new container instance
// resets the state and publishes the probe's initial result; on hold
// nothing happens; a container that is not running is a failure (and the
// worker stops if it will not restart); a deleted pod's liveness and
// startup probes report success and stop, so that shutdown is quiet;
// then nothing is probed before the initial delay, the startup probe is
// not run once started, and the other two wait for it.
func Tick(p Params, s State, o Observation) (State, Step) {
	var st Step
	if o.Terminal {
		st.Stop = true
		return s, st
	}
	if o.ContainerID == "" {
		return s, st
	}
	if o.ContainerID != s.ContainerID {
		s = State{ContainerID: o.ContainerID}
		st.Publish, st.Result = true, initialResult(p.Type)
	}
	if s.OnHold {
		return s, st
	}
	if !o.Running {
		st.Publish, st.Result = true, Failure
		st.Stop = o.Exited && !o.WillRestart
		return s, st
	}
	if o.Deleting && (p.Type == Liveness || p.Type == Startup) {
		st.Publish, st.Result = true, Success
		st.Stop = true
		return s, st
	}
	if o.Now.Sub(o.StartedAt) < p.InitialDelay {
		return s, st
	}
	if o.Started == (p.Type == Startup) {
		return s, st
	}
	st.Probe = true
	return s, st
}

// Record counts a check's result (Success or Failure; a check that
// errored is never recorded) and publishes it only once it has repeated
// successThreshold or failureThreshold times in a row. A published
// liveness failure or startup verdict puts the worker on hold until the
// container is replaced.
func Record(p Params, s State, r Result) (State, Step) {
	if r == s.last && s.run > 0 {
		s.run++
	} else {
		s.last, s.run = r, 1
	}
	if (r == Failure && s.run < p.FailureThreshold) || (r == Success && s.run < p.SuccessThreshold) {
		return s, Step{}
	}
	if (p.Type == Liveness && r == Failure) || p.Type == Startup {
		s.OnHold, s.run = true, 0
	}
	return s, Step{Publish: true, Result: r}
}
