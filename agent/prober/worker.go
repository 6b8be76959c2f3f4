package prober

import (
	"context"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
)

// maxAttempts is how often a check that errored is tried again within
// one tick before its result is discarded, as upstream.
const maxAttempts = 3

// worker runs one probe of one container. Its state is owned by its
// goroutine; it reads the pod from the manager at each tick.
type worker struct {
	m       *Manager
	ctx     context.Context // the pod's: ends with RemovePod or the manager's
	key     workerKey
	spec    *v1.Probe
	params  Params
	trigger chan struct{} // a check now rather than at the next tick

	state State
}

func (w *worker) poke() {
	select {
	case w.trigger <- struct{}{}:
	default:
	}
}

func (w *worker) run() {
	defer w.m.wg.Done()
	// Just after the agent starts, the probes of every pod it finds
	// running would all fire at once; spread the first checks over a
	// period, as upstream does.
	if time.Since(w.m.start) < w.params.Period {
		t := time.NewTimer(rand.N(w.params.Period))
		select {
		case <-w.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	ticker := time.NewTicker(w.params.Period)
	defer ticker.Stop()
	for w.tick() {
		select {
		case <-w.ctx.Done():
			return
		case <-ticker.C:
		case <-w.trigger:
			ticker.Reset(w.params.Period)
		}
	}
}

// tick runs one step of the state machine, with a check when it asks for
// one, and says whether the worker goes on.
func (w *worker) tick() bool {
	obs, pod, target, ok := w.m.observe(w.key)
	if !ok {
		return false
	}
	var st Step
	w.state, st = Tick(w.params, w.state, obs)
	if st.Publish {
		w.m.publish(w, w.state.ContainerID, st.Result)
	}
	if st.Stop {
		return false
	}
	if !st.Probe {
		return true
	}
	r, ok := w.check(pod, target)
	if !ok {
		return w.ctx.Err() == nil
	}
	w.state, st = Record(w.params, w.state, r)
	if st.Publish {
		w.m.publish(w, w.state.ContainerID, st.Result)
	}
	return true
}

// check runs the probe, trying again when it errors, records its event,
// and returns its result; false when there is none to record (it
// errored, or the worker is stopping).
func (w *worker) check(pod *v1.Pod, t Target) (Result, bool) {
	var (
		o   Outcome
		out string
		err error
	)
	for range maxAttempts {
		o, out, err = w.m.checker.Check(w.ctx, w.spec, t)
		if err == nil || w.ctx.Err() != nil {
			break
		}
	}
	if w.ctx.Err() != nil {
		// A check cut short by the stop says nothing of the container.
		return Unknown, false
	}
	recordOutcome(w.m.recorder, pod, w.key.container, w.key.probe, o, out, err)
	if err != nil {
		return Unknown, false
	}
	if o == OutcomeFailure {
		return Failure, true
	}
	return Success, true
}

// observe reads what the worker's pod and container look like now; false
// when the pod is no longer known.
func (m *Manager) observe(k workerKey) (Observation, *v1.Pod, Target, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, c, cs := m.containerLocked(k.pod, k.container)
	if e == nil || c == nil {
		return Observation{}, nil, Target{}, false
	}
	o := Observation{
		Now:      time.Now(),
		Deleting: e.pod.DeletionTimestamp != nil,
		Terminal: e.status.Phase == v1.PodSucceeded || e.status.Phase == v1.PodFailed,
	}
	podIP := e.status.PodIP
	if podIP == "" {
		podIP = m.hostIP
	}
	t := Target{Container: c, PodIP: podIP}
	if cs != nil {
		o.ContainerID = bareID(cs.ContainerID)
		t.ContainerID = o.ContainerID
		if r := cs.State.Running; r != nil {
			o.Running, o.StartedAt = true, r.StartedAt.Time
		}
		if term := cs.State.Terminated; term != nil {
			o.Exited = true
			o.WillRestart = willRestart(e.pod, c, term.ExitCode)
		}
		o.Started = m.startedLocked(e, c, o.ContainerID)
	}
	return o, e.pod, t, true
}

// willRestart says whether the agent starts a container again after it
// exited with code: sidecars always; others per their own restart policy
// when set, else the pod's.
func willRestart(pod *v1.Pod, c *v1.Container, code int32) bool {
	policy := pod.Spec.RestartPolicy
	if c.RestartPolicy != nil {
		policy = v1.RestartPolicy(*c.RestartPolicy)
	}
	switch policy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return code != 0
	}
	return true
}
