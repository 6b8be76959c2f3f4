package prober

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// updatesBuffer is how many published changes wait for the consumer
// before workers block on sending.
const updatesBuffer = 64

// Update says that a container's probe result changed. For liveness and
// startup a Failure asks the pod worker to kill ContainerID (if it is
// still the running instance) and restart it per policy; a readiness
// change asks it to write the pod's status again.
type Update struct {
	PodUID      types.UID
	Container   string
	ContainerID string
	Type        Type
	Result      Result
}

// Options configures a Manager.
type Options struct {
	// Execer runs exec probes (the runtime). Without it exec probes
	// error, and their results are discarded.
	Execer Execer
	// Recorder receives the Unhealthy and ProbeWarning events. Required.
	Recorder EventRecorder
	// HostIP is the default host of network probes for pods whose status
	// has no podIP; pods use the host's network.
	HostIP string
}

// Manager runs the probes of the pods it is given: one worker goroutine
// per probe per container, each started by UpdatePod and stopped by
// RemovePod or the end of the context New was given. Methods are safe for
// concurrent use.
type Manager struct {
	ctx      context.Context
	checker  *Checker
	recorder EventRecorder
	hostIP   string
	updates  chan Update
	start    time.Time // when New was called
	wg       sync.WaitGroup

	// mu guards the fields below. It is never held across a check, an
	// event or a send on updates.
	mu      sync.Mutex
	closed  bool // Wait was called: no worker may start
	pods    map[types.UID]*podEntry
	results map[workerKey]published
	// byID holds the same results by container instance, for Results.
	byID map[instanceKey]Result
}

type instanceKey struct {
	containerID string
	probe       Type
}

type workerKey struct {
	pod       types.UID
	container string
	probe     Type
}

type published struct {
	containerID string
	result      Result
}

type podEntry struct {
	pod     *v1.Pod
	status  v1.PodStatus
	cancel  context.CancelFunc
	ctx     context.Context
	workers map[workerKey]*worker
}

// New returns a Manager whose workers stop when ctx ends.
func New(ctx context.Context, opts Options) (*Manager, error) {
	if opts.Recorder == nil {
		return nil, errors.New("prober: an event recorder is required")
	}
	return &Manager{
		ctx:      ctx,
		checker:  NewChecker(opts.Execer),
		recorder: opts.Recorder,
		hostIP:   opts.HostIP,
		updates:  make(chan Update, updatesBuffer),
		start:    time.Now(),
		pods:     make(map[types.UID]*podEntry),
		results:  make(map[workerKey]published),
		byID:     make(map[instanceKey]Result),
	}, nil
}

// Updates delivers every change of a published result, in order per
// probe. The consumer must keep reading it; workers wait for room.
func (m *Manager) Updates() <-chan Update { return m.updates }

// Wait returns once every worker has stopped, after the context ended or
// every pod was removed; no worker starts after Wait is called.
func (m *Manager) Wait() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.wg.Wait()
}

// UpdatePod gives the manager a pod's latest spec and status (as the pod
// worker has it; container IDs in the CRI's "<runtime>://<id>" form or
// bare) and starts the workers of probes it does not run yet, for app
// containers and sidecars (restartable init containers). Workers read
// the status at each tick; a new container ID resets a probe. The pod is
// kept as given and must not be modified afterwards; the status is copied.
func (m *Manager) UpdatePod(pod *v1.Pod, status v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.ctx.Err() != nil {
		return
	}
	e := m.pods[pod.UID]
	if e == nil {
		ctx, cancel := context.WithCancel(m.ctx)
		e = &podEntry{ctx: ctx, cancel: cancel, workers: make(map[workerKey]*worker)}
		m.pods[pod.UID] = e
	}
	e.pod, e.status = pod, *status.DeepCopy()
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if isSidecar(c) {
			m.startWorkersLocked(e, c)
		}
	}
	for i := range pod.Spec.Containers {
		m.startWorkersLocked(e, &pod.Spec.Containers[i])
	}
}

func (m *Manager) startWorkersLocked(e *podEntry, c *v1.Container) {
	for t, spec := range map[Type]*v1.Probe{Liveness: c.LivenessProbe, Readiness: c.ReadinessProbe, Startup: c.StartupProbe} {
		if spec == nil {
			continue
		}
		k := workerKey{pod: e.pod.UID, container: c.Name, probe: t}
		if _, ok := e.workers[k]; ok {
			continue
		}
		w := &worker{m: m, ctx: e.ctx, key: k, spec: spec, params: ParamsFor(t, spec), trigger: make(chan struct{}, 1)}
		e.workers[k] = w
		m.wg.Add(1)
		go w.run()
	}
}

// RemovePod stops the pod's workers and forgets its results.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pods[uid]
	if e == nil {
		return
	}
	e.cancel()
	delete(m.pods, uid)
	for k, r := range m.results {
		if k.pod == uid {
			delete(m.results, k)
			delete(m.byID, instanceKey{r.containerID, k.probe})
		}
	}
}

// Readiness says whether a container is ready: running, started, and
// either without a readiness probe or with its last published readiness
// a success for the running instance. A pod not given to UpdatePod is not
// ready.
func (m *Manager) Readiness(uid types.UID, container string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, c, cs := m.containerLocked(uid, container)
	if cs == nil || cs.State.Running == nil {
		return false
	}
	id := bareID(cs.ContainerID)
	if !m.startedLocked(e, c, id) {
		return false
	}
	if c.ReadinessProbe == nil {
		return true
	}
	k := workerKey{pod: uid, container: container, probe: Readiness}
	r, ok := m.results[k]
	if !ok || r.containerID != id {
		// Not judged yet: ask the worker for a check now rather than at
		// its next tick, as upstream does.
		if w := e.workers[k]; w != nil {
			w.poke()
		}
		return false
	}
	return r.result == Success
}

// Started says whether a container has started: running, and either
// without a startup probe or with it passed for the running instance.
func (m *Manager) Started(uid types.UID, container string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, c, cs := m.containerLocked(uid, container)
	if cs == nil || cs.State.Running == nil {
		return false
	}
	return m.startedLocked(e, c, bareID(cs.ContainerID))
}

func (m *Manager) startedLocked(e *podEntry, c *v1.Container, id string) bool {
	if c.StartupProbe == nil {
		return true
	}
	r, ok := m.results[workerKey{pod: e.pod.UID, container: c.Name, probe: Startup}]
	return ok && r.containerID == id && r.result == Success
}

// containerLocked finds a container's spec and status in a known pod.
func (m *Manager) containerLocked(uid types.UID, name string) (*podEntry, *v1.Container, *v1.ContainerStatus) {
	e := m.pods[uid]
	if e == nil {
		return nil, nil, nil
	}
	var c *v1.Container
	for i := range e.pod.Spec.Containers {
		if e.pod.Spec.Containers[i].Name == name {
			c = &e.pod.Spec.Containers[i]
		}
	}
	for i := range e.pod.Spec.InitContainers {
		if e.pod.Spec.InitContainers[i].Name == name && isSidecar(&e.pod.Spec.InitContainers[i]) {
			c = &e.pod.Spec.InitContainers[i]
		}
	}
	if c == nil {
		return e, nil, nil
	}
	for _, list := range [][]v1.ContainerStatus{e.status.ContainerStatuses, e.status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name && list[i].ContainerID != "" {
				return e, c, &list[i]
			}
		}
	}
	return e, c, nil
}

// publish sets a worker's result and sends an Update when it changed.
// Nothing is published once the worker's pod was removed.
func (m *Manager) publish(w *worker, containerID string, r Result) {
	m.mu.Lock()
	if w.ctx.Err() != nil {
		m.mu.Unlock()
		return
	}
	prev, had := m.results[w.key]
	now := published{containerID: containerID, result: r}
	m.results[w.key] = now
	if had && prev.containerID != containerID {
		delete(m.byID, instanceKey{prev.containerID, w.key.probe})
	}
	m.byID[instanceKey{containerID, w.key.probe}] = r
	m.mu.Unlock()
	if had && prev == now {
		return
	}
	select {
	case m.updates <- Update{PodUID: w.key.pod, Container: w.key.container, ContainerID: containerID, Type: w.key.probe, Result: r}:
	case <-w.ctx.Done():
	}
}

func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// bareID strips the "<runtime>://" of a status's container ID.
func bareID(id string) string {
	if i := strings.Index(id, "://"); i >= 0 {
		return id[i+3:]
	}
	return id
}
