// Package podworkers serialises the agent's work on each pod, as the
// kubelet's pod workers (pkg/kubelet/pod_workers.go):
//
//   - one goroutine per pod UID runs the pod's syncs one at a time;
//     UpdatePod never blocks and replaces any update not yet consumed, so
//     the latest update wins;
//   - a UID moves only forward: sync → terminating → terminated →
//     finished. Termination starts on a kill (the pod removed from its
//     source), a deletionTimestamp, or a terminal phase; it cannot be
//     undone by a later update, and starting it (or shortening the grace
//     period) cancels the sync in flight;
//   - a finished UID ignores every update until housekeeping
//     (SyncKnownPods) purges it, so a pod that finished never runs again
//     under the same UID by itself. A create of a UID that is terminating
//     or finished, though, is a pod that came back with the same UID (a
//     static pod's manifest moved out and back, or edited and reverted):
//     as upstream's restartRequested, it is remembered, and housekeeping
//     purges the finished worker so that the caller creates it anew;
//   - a runtime pod that no source and no worker has (an orphan) is killed
//     by a worker of its UID too, so that its removal and a new pod of the
//     same UID are serialised like any two updates of one UID;
//   - two static pods with one full name (name_namespace) never run at
//     once: a new UID waits until the one holding the name has finished,
//     so an edited manifest's successor starts after its predecessor
//     stopped;
//   - the grace period only shrinks: the pod's deletionGracePeriodSeconds
//     or a kill's override when smaller, else the spec's
//     terminationGracePeriodSeconds, at least 1 s.
//
// What a sync does is the Syncer's (package podsync).
package podworkers

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/kubetypes"
)

// Defaults, the kubelet's.
const (
	DefaultResyncInterval = time.Minute
	DefaultBackOffPeriod  = 10 * time.Second
	// staticRetry is how soon a static pod waiting for its full name
	// checks again (the release also wakes it).
	staticRetry = 10 * time.Second
)

// SyncResult is what a SyncPod reports.
type SyncResult struct {
	// Terminal: the pod reached a terminal phase; terminate it.
	Terminal bool
	// RequeueAfter, when positive, is when the pod wants its next sync
	// (a back-off ending) sooner than the resync interval.
	RequeueAfter time.Duration
	// StatusDue, when positive, is when the pod's status changes by the
	// clock alone (a stdin-once container's start, held back for the
	// relist period): the pod is synced then, without the requeues'
	// jitter, whether or not the sync failed.
	StatusDue time.Duration
}

// Syncer does the work of each phase of a pod's life.
type Syncer interface {
	// SyncPod brings the pod's containers towards its spec.
	SyncPod(ctx context.Context, pod *v1.Pod) (SyncResult, error)
	// SyncTerminatingPod stops every container of the pod within
	// gracePeriod seconds; it returns nil only when none runs any more.
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, gracePeriod int64) error
	// SyncTerminatedPod cleans up after the pod's containers stopped and
	// reports its final status.
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod) error
	// SyncTerminatingRuntimePod stops and removes what the runtime has of
	// an orphan, a pod known only from the runtime (pod carries its UID,
	// name and namespace only); it returns nil only when nothing of it is
	// left.
	SyncTerminatingRuntimePod(ctx context.Context, pod *v1.Pod) error
}

// UpdateType is what an update asks, as upstream's SyncPodType.
type UpdateType int

const (
	// Create: a pod new to the agent.
	Create UpdateType = iota
	// Modify: a new version of the pod's spec.
	Modify
	// Sync: sync again (the runtime or a probe saw a change).
	Sync
	// Kill: stop the pod (removed from its source, or an orphan).
	Kill
)

// Update is one request to a pod's worker.
type Update struct {
	Type UpdateType
	Pod  *v1.Pod
	// GracePeriod overrides the grace of a Kill when smaller.
	GracePeriod *int64
	// RuntimeOnly: Pod stands for a runtime pod that no source has (an
	// orphan; only its UID, name and namespace are set). Only a Kill of a
	// UID the workers do not know is taken.
	RuntimeOnly bool
}

// Options configures Workers.
type Options struct {
	Syncer Syncer
	// ResyncInterval is the period of a pod's syncs when nothing happens;
	// BackOffPeriod the wait after a failed sync. Zero takes the
	// defaults.
	ResyncInterval, BackOffPeriod time.Duration
}

// Workers runs one worker per pod UID. Methods are safe for concurrent
// use; the workers stop when the context given to New ends.
type Workers struct {
	ctx     context.Context
	syncer  Syncer
	resync  time.Duration
	backOff time.Duration
	wg      sync.WaitGroup

	// mu guards the fields below; it is never held across a sync.
	mu   sync.Mutex
	pods map[types.UID]*state
	// static: the UID holding each static full name, and those waiting
	// for it in arrival order.
	static  map[string]types.UID
	waiting map[string][]types.UID
}

// state is one UID's lifecycle and pending work.
type state struct {
	pod     *v1.Pod
	pending bool
	bell    chan struct{} // capacity 1
	// Latched lifecycle facts; they never go back.
	terminating, terminated, finished bool
	grace                             int64 // 0: not set yet
	started                           bool  // passed the static gate
	cancel                            context.CancelFunc
	// runtimeOnly: an orphan runtime pod; it terminates and finishes
	// without a SyncTerminatedPod.
	runtimeOnly bool
	// restartRequested: a create of this UID came while it terminated or
	// after it finished; housekeeping purges the finished worker so that
	// the pod is created again.
	restartRequested bool
}

// WorkType is which phase a pod's next sync runs.
type WorkType int

const (
	SyncWork WorkType = iota
	TerminatingWork
	TerminatedWork
)

// New returns Workers whose goroutines end with ctx.
func New(ctx context.Context, opts Options) (*Workers, error) {
	if opts.Syncer == nil {
		return nil, errors.New("podworkers: no syncer given")
	}
	w := &Workers{ctx: ctx, syncer: opts.Syncer, resync: opts.ResyncInterval, backOff: opts.BackOffPeriod,
		pods: map[types.UID]*state{}, static: map[string]types.UID{}, waiting: map[string][]types.UID{}}
	if w.resync == 0 {
		w.resync = DefaultResyncInterval
	}
	if w.backOff == 0 {
		w.backOff = DefaultBackOffPeriod
	}
	return w, nil
}

// Wait returns once every worker has stopped (after the context ended).
func (w *Workers) Wait() { w.wg.Wait() }

// UpdatePod hands an update to the pod's worker, starting one for a new
// UID. It never blocks.
func (w *Workers) UpdatePod(u Update) {
	pod := u.Pod
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		return
	}
	s := w.pods[pod.UID]
	if s == nil {
		if u.Type == Sync || u.RuntimeOnly && u.Type != Kill {
			return // nothing to sync for a pod the workers do not know
		}
		s = &state{pod: pod, bell: make(chan struct{}, 1), runtimeOnly: u.RuntimeOnly}
		w.pods[pod.UID] = s
		if kubetypes.IsStaticPod(pod) && !u.RuntimeOnly {
			name := kubetypes.PodFullName(pod)
			w.waiting[name] = append(w.waiting[name], pod.UID)
		}
		// A pod first seen in a terminal phase (an agent restart) only
		// needs its end: never start it again.
		if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			s.terminating = true
			s.grace = effectiveGrace(0, pod, u.GracePeriod)
		}
		w.wg.Add(1)
		go w.run(pod.UID, s)
	} else if u.RuntimeOnly {
		return // the UID's worker has the pod itself: it stops it
	} else if u.Type == Create && (s.terminating || s.finished) {
		// The same UID created again while its worker ends or after it
		// ended (upstream's restartRequested): the old life finishes as
		// it is, and housekeeping purges it so that the pod starts anew.
		s.restartRequested = true
		return
	}
	if s.finished {
		return
	}
	if u.Type != Sync {
		s.pod = pod
	}
	kill := u.Type == Kill || s.pod.DeletionTimestamp != nil
	if kill || s.terminating {
		grace := effectiveGrace(s.grace, s.pod, u.GracePeriod)
		shortened := s.grace != 0 && grace < s.grace
		if !s.terminating || shortened {
			s.terminating = true
			if s.cancel != nil {
				s.cancel() // stop the sync in flight; termination goes next
			}
		}
		s.grace = grace
	}
	s.pending = true
	ring(s.bell)
}

func ring(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// effectiveGrace is the kubelet's calculateEffectiveGracePeriod: the
// latched value, replaced by the deletion grace or the override when
// smaller; without any, the spec's; at least 1.
func effectiveGrace(latched int64, pod *v1.Pod, override *int64) int64 {
	g := latched
	applied := false
	if d := pod.DeletionGracePeriodSeconds; d != nil && (g == 0 || *d < g) {
		g, applied = *d, true
	}
	if override != nil && (g == 0 || *override < g) {
		g, applied = *override, true
	}
	if !applied && g == 0 {
		g = v1.DefaultTerminationGracePeriodSeconds
		if t := pod.Spec.TerminationGracePeriodSeconds; t != nil {
			g = *t
		}
	}
	return max(g, 1)
}

// run is the worker of one UID.
func (w *Workers) run(uid types.UID, s *state) {
	defer w.wg.Done()
	logger := klog.FromContext(w.ctx).WithValues("podUID", uid)
	var timer *time.Timer
	var due <-chan time.Time
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-s.bell:
		case <-due:
		}
		if timer != nil {
			timer.Stop()
		}
		work, pod, grace, ctx, ok := w.take(uid, s)
		if !ok {
			timer = time.NewTimer(jitter(staticRetry))
			due = timer.C
			continue
		}
		var next, dueAt time.Duration
		var err error
		switch work {
		case SyncWork:
			var res SyncResult
			res, err = w.syncer.SyncPod(ctx, pod)
			dueAt = res.StatusDue
			if err == nil && res.Terminal {
				w.mu.Lock()
				if !s.terminating {
					s.terminating = true
					s.grace = effectiveGrace(s.grace, s.pod, nil)
				}
				w.mu.Unlock()
				next = -1
			} else if err == nil {
				next = w.resync
				if res.RequeueAfter > 0 && res.RequeueAfter < next {
					next = res.RequeueAfter
				}
			}
		case TerminatingWork:
			if s.runtimeOnly {
				if err = w.syncer.SyncTerminatingRuntimePod(ctx, pod); err == nil {
					w.finish(s, pod)
					logger.V(2).Info("Runtime pod removed", "pod", klog.KObj(pod))
					return
				}
				break
			}
			if err = w.syncer.SyncTerminatingPod(ctx, pod, grace); err == nil {
				w.mu.Lock()
				s.terminated = true
				w.mu.Unlock()
				next = -1
			}
		case TerminatedWork:
			if err = w.syncer.SyncTerminatedPod(ctx, pod); err == nil {
				w.finish(s, pod)
				logger.V(2).Info("Pod finished", "pod", klog.KObj(pod))
				return
			}
		}
		w.mu.Lock()
		s.cancel = nil
		w.mu.Unlock()
		switch {
		case err != nil && ctx.Err() != nil && w.ctx.Err() == nil:
			// Cancelled by termination: go on at once.
			next = -1
		case err != nil:
			if w.ctx.Err() != nil {
				return
			}
			logger.Info("Error syncing pod, skipping", "pod", klog.KObj(pod), "err", err)
			next = w.backOff
		}
		if next < 0 {
			ring(s.bell)
			due = nil
			continue
		}
		d := jitter(next)
		if dueAt > 0 && dueAt < d {
			d = dueAt
		}
		timer = time.NewTimer(d)
		due = timer.C
	}
}

// jitter is d stretched by up to half, as the kubelet's requeues.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(d)/2+1))
}

// take claims the pod's next work: its type, latest spec, grace and a
// context that termination cancels. ok is false while a static pod waits
// for its full name.
func (w *Workers) take(uid types.UID, s *state) (WorkType, *v1.Pod, int64, context.Context, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s.pending = false
	work := SyncWork
	switch {
	case s.terminated:
		work = TerminatedWork
	case s.terminating:
		work = TerminatingWork
	}
	if work == SyncWork && !s.started {
		if !w.allowStart(uid, s) {
			return 0, nil, 0, nil, false
		}
		s.started = true
	}
	ctx, cancel := context.WithCancel(w.ctx)
	s.cancel = cancel
	return work, s.pod, s.grace, ctx, true
}

// allowStart admits a static pod when no other UID holds its full name and
// it is the first waiter that is not terminating. Non-static pods always
// start.
func (w *Workers) allowStart(uid types.UID, s *state) bool {
	if !kubetypes.IsStaticPod(s.pod) {
		return true
	}
	name := kubetypes.PodFullName(s.pod)
	if holder, ok := w.static[name]; ok && holder != uid {
		return false
	}
	for _, waiter := range w.waiting[name] {
		ws := w.pods[waiter]
		if ws == nil || ws.terminating || ws.finished {
			continue
		}
		if waiter != uid {
			return false
		}
		break
	}
	w.static[name] = uid
	w.removeWaiter(name, uid)
	return true
}

func (w *Workers) removeWaiter(name string, uid types.UID) {
	q := w.waiting[name]
	for i, u := range q {
		if u == uid {
			w.waiting[name] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(w.waiting[name]) == 0 {
		delete(w.waiting, name)
	}
}

// finish marks the pod finished and hands a static full name on.
func (w *Workers) finish(s *state, pod *v1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s.finished = true
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	if kubetypes.IsStaticPod(pod) {
		name := kubetypes.PodFullName(pod)
		if w.static[name] == pod.UID {
			delete(w.static, name)
		}
		w.removeWaiter(name, pod.UID)
		for _, waiter := range w.waiting[name] {
			if ws := w.pods[waiter]; ws != nil {
				ring(ws.bell)
			}
		}
	}
}

// Status is what the workers know of a UID.
type Status struct {
	Known, Terminating, Terminated, Finished bool
	// RestartRequested: created again while it terminated or after it
	// finished; housekeeping purges it once it finished.
	RestartRequested bool
}

// PodStatus reports the UID's lifecycle.
func (w *Workers) PodStatus(uid types.UID) Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.pods[uid]
	if s == nil {
		return Status{}
	}
	return Status{Known: true, Terminating: s.terminating, Terminated: s.terminated, Finished: s.finished, RestartRequested: s.restartRequested}
}

// SyncKnownPods reconciles the workers with the pods the sources have
// (housekeeping), as upstream's: a worker of a UID not in desired is told
// to stop, and a finished one is forgotten, as is a finished one whose UID
// was created again (RestartRequested); it returns the UIDs forgotten. A
// desired pod forgotten here must be created again by the caller. Call it
// only once every source has been seen.
func (w *Workers) SyncKnownPods(desired map[types.UID]bool) (forgotten []types.UID) {
	w.mu.Lock()
	var stop []*v1.Pod
	for uid, s := range w.pods {
		if desired[uid] && !s.restartRequested {
			continue
		}
		if s.finished {
			delete(w.pods, uid)
			forgotten = append(forgotten, uid)
			continue
		}
		if !desired[uid] && !s.terminating {
			stop = append(stop, s.pod)
		}
	}
	w.mu.Unlock()
	for _, p := range stop {
		w.UpdatePod(Update{Type: Kill, Pod: p})
	}
	return forgotten
}

// Known lists the UIDs the workers have, finished or not.
func (w *Workers) Known() map[types.UID]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[types.UID]bool, len(w.pods))
	for uid := range w.pods {
		out[uid] = true
	}
	return out
}
