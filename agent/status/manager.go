// Package status writes the statuses of the agent's pods to the API
// server, as the kubelet's status manager (pkg/kubelet/status) does:
//
//   - the pod workers set a pod's status whenever they compute it; a status
//     equal to the one set before is ignored, so nothing is written when
//     nothing changed;
//   - Run writes changed statuses as strategic merge patches to
//     pods/<name>/status, carrying metadata.uid so that the patch fails
//     rather than reach a pod of the same name created since (upstream's
//     PatchPodStatus); an empty diff is not sent; failures are retried;
//     only the latest status of a pod is written (the one it has when a
//     writer gets to it), and several pods are written at once
//     (Options.Writers), one write per pod at a time;
//   - a pod's first status is held back while its containers are being
//     created, for at most Options.FirstWriteDelay: a pod that starts
//     within it is written once, Running, rather than Pending
//     (ContainerCreating) and then Running, as upstream's writer
//     coalesces them when it is behind: a node starting many pods at
//     once spends one request on each against its client's rate limit,
//     not two;
//   - the patch is computed against the newest copy of the pod the
//     manager has (the agent's watch, a mirror pod it saw, the answer to
//     its previous write) rather than read first: upstream's GET before
//     each patch doubles the requests a pod start costs against the
//     client's rate limit. A pod the manager has no copy of is read
//     first, as upstream does (a static pod's mirror only on the periodic
//     retry: the watch delivers it);
//   - conditions the agent does not own are kept as the API has them, and a
//     terminal phase is not written before the pod's worker reports its
//     containers stopped (TerminatePod), so the API never shows a pod
//     Succeeded or Failed that could still be running;
//   - a static pod reports through its mirror pod (same name, annotation
//     kubernetes.io/config.mirror equal to the static pod's config hash),
//     and is skipped while it has none;
//   - a pod deleted through the API (deletionTimestamp set) whose worker
//     finished and whose API phase is terminal is deleted with grace period
//     0 and its UID as a precondition: the last step of a graceful delete.
package status

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/kubetypes"
)

// DefaultSyncPeriod is how often statuses not yet written are retried, as
// the kubelet's syncPeriod.
const DefaultSyncPeriod = 10 * time.Second

// Options configures a Manager.
type Options struct {
	// Client writes the statuses. Required.
	Client corev1client.PodsGetter
	// SyncPeriod is the retry period; zero is DefaultSyncPeriod.
	SyncPeriod time.Duration
	// Writers is how many pods' statuses are written at once; zero is
	// DefaultWriters.
	Writers int
	// FirstWriteDelay bounds how long a pod's first status is held while
	// its containers are being created; zero is DefaultFirstWriteDelay,
	// negative writes at once.
	FirstWriteDelay time.Duration
}

// DefaultFirstWriteDelay: the process runtime starts a container in
// 50-150 ms, a burst of 110 in a second or two.
const DefaultFirstWriteDelay = time.Second

// DefaultWriters is how many statuses are written at once: enough that a
// node starting its 110 pods at once is not held back by the round trip of
// each write.
const DefaultWriters = 4

// Manager keeps the latest status of each pod and writes it. Its methods
// are safe for concurrent use; writing happens in Run.
type Manager struct {
	client  corev1client.PodsGetter
	period  time.Duration
	writers int
	hold    time.Duration
	notify  chan struct{}

	// mu guards entries and mirrors; it is never held across an API call.
	mu      sync.Mutex
	entries map[types.UID]*entry
	// mirrors are the mirror pods last observed, by namespace/name: a
	// mirror may be seen before its static pod's first status.
	mirrors map[string]*v1.Pod
}

type entry struct {
	pod *v1.Pod
	// api is the newest copy of the pod in the API that the manager has
	// seen (for a static pod, of its mirror pod), the base of the next
	// patch; nil: read it first.
	api     *v1.Pod
	status  v1.PodStatus
	version uint64 // bumped by every change
	sent    uint64 // the version last written
	// sentTo is the UID of the API pod the last write reached. For a
	// static pod it is a mirror pod's: a mirror deleted and created
	// again has a new UID and none of the status, so "written" holds
	// per mirror, not per static pod.
	sentTo types.UID
	// since is when the first status was set: the first write is held
	// until since+hold while the pod's containers are being created.
	since time.Time
	// finished: the worker stopped every container (TerminatePod); a
	// terminal phase may be written, and an API deletion completed.
	finished bool
	// deleted: the final DELETE was made.
	deleted bool
}

// New returns a Manager; nothing is written until Run.
func New(opts Options) (*Manager, error) {
	if opts.Client == nil {
		return nil, errors.New("status: no client given")
	}
	period := opts.SyncPeriod
	if period == 0 {
		period = DefaultSyncPeriod
	}
	writers := opts.Writers
	if writers <= 0 {
		writers = DefaultWriters
	}
	hold := opts.FirstWriteDelay
	switch {
	case hold == 0:
		hold = DefaultFirstWriteDelay
	case hold < 0:
		hold = 0
	}
	return &Manager{client: opts.Client, period: period, writers: writers, hold: hold, notify: make(chan struct{}, 1), entries: map[types.UID]*entry{}, mirrors: map[string]*v1.Pod{}}, nil
}

// SetPodStatus records pod's status. It is ignored when equal to the status
// recorded before, unless the pod is being deleted.
func (m *Manager) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[pod.UID]
	if e == nil {
		e = m.newEntry(pod)
	} else if equality.Semantic.DeepEqual(e.status, status) && pod.DeletionTimestamp == nil {
		e.pod = pod
		e.observe(pod)
		return
	}
	e.observe(pod)
	e.pod, e.status = pod, *status.DeepCopy()
	e.version++
	m.signal()
}

// Status is the status last recorded for the pod.
func (m *Manager) Status(uid types.UID) (v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.entries[uid]; e != nil {
		return *e.status.DeepCopy(), true
	}
	return v1.PodStatus{}, false
}

// TerminatePod says the pod's containers are all stopped and status is
// final: its terminal phase may be written, and, if it is being deleted
// through the API, the deletion completed. As upstream's TerminatePod, a
// container that may have run without a terminated state is marked
// ContainerStatusUnknown with exit code 137 (whether it succeeded is
// unknown; containers that never started stay waiting, see Terminated),
// and a pod still Pending or Running becomes Failed (static pods excepted,
// upstream #116484), so that the API never keeps a stopped pod in a live
// phase.
func (m *Manager) TerminatePod(pod *v1.Pod, status v1.PodStatus) {
	status = Terminated(pod, status)
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[pod.UID]
	if e == nil {
		e = m.newEntry(pod)
	}
	e.observe(pod)
	e.pod, e.status, e.finished = pod, *status.DeepCopy(), true
	e.version++
	m.signal()
}

// newEntry adds the entry of pod, with its mirror pod if one was seen.
func (m *Manager) newEntry(pod *v1.Pod) *entry {
	e := &entry{since: time.Now()}
	if mirror := m.mirrors[pod.Namespace+"/"+pod.Name]; mirror != nil && mirrors(mirror, pod) {
		e.api = mirror
	}
	m.entries[pod.UID] = e
	return e
}

// mirrors says whether mirror is static's mirror pod.
func mirrors(mirror, static *v1.Pod) bool {
	hash, ok := mirror.Annotations[kubetypes.ConfigMirrorAnnotationKey]
	return ok && mirror.Name == static.Name && mirror.Namespace == static.Namespace &&
		kubetypes.IsStaticPod(static) && static.Annotations[kubetypes.ConfigHashAnnotationKey] == hash
}

// observe takes pod, as a source delivered it, as the base of the next
// patch if it is an API pod newer than the base (a static pod's base is
// its mirror pod, given to ObserveMirror).
func (e *entry) observe(pod *v1.Pod) {
	if kubetypes.IsStaticPod(pod) {
		return
	}
	e.api = newer(e.api, pod)
}

// ObserveMirror gives the manager a mirror pod as the agent's watch sees
// it: the base of its static pod's next patch, and the sign that a status
// skipped for want of a mirror can be written now.
func (m *Manager) ObserveMirror(mirror *v1.Pod) {
	if _, ok := mirror.Annotations[kubetypes.ConfigMirrorAnnotationKey]; !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := mirror.Namespace + "/" + mirror.Name
	if old := m.mirrors[key]; old == nil || old.UID != mirror.UID {
		m.mirrors[key] = mirror
	} else if n := newer(old, mirror); n != nil {
		m.mirrors[key] = n
	}
	for _, e := range m.entries {
		if e.pod == nil || !mirrors(mirror, e.pod) {
			continue
		}
		if e.api == nil || e.api.UID != mirror.UID {
			e.api = mirror // a new mirror: its resourceVersion starts over
		} else {
			e.api = newer(e.api, mirror)
		}
		if e.due() {
			m.signal()
		}
	}
}

// due says whether the entry has something to write: a status not yet
// written, or, for a static pod, a mirror pod other than the one its
// status was written to (the mirror was deleted and created again: the new
// one gets the whole status at once, not at the next change).
func (e *entry) due() bool {
	if e.version > e.sent {
		return true
	}
	return e.sent > 0 && e.api != nil && e.api.UID != e.sentTo && kubetypes.IsStaticPod(e.pod)
}

// Reconcile compares the API's version of the pod (from the agent's
// watch) with the status recorded for it, and writes the status again if
// the API's differs in what the agent owns: another writer changed it, as
// upstream's needsReconcile.
func (m *Manager) Reconcile(api *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[api.UID]
	if e == nil || kubetypes.IsStaticPod(e.pod) {
		return // unknown, or reported via a mirror
	}
	e.api = newer(e.api, api)
	if e.version > e.sent {
		return // a write pending anyway
	}
	patch, err := Patch(api.UID, api.Status, Merge(api.Status, e.status, e.finished))
	if err == nil && patch != nil {
		e.version++
		m.signal()
	}
}

// RemovePod forgets the pod once its worker is gone.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.entries[uid]; e != nil && e.pod != nil && kubetypes.IsStaticPod(e.pod) {
		delete(m.mirrors, e.pod.Namespace+"/"+e.pod.Name)
	}
	delete(m.entries, uid)
}

func (m *Manager) signal() {
	select {
	case m.notify <- struct{}{}:
	default:
	}
}

// Run writes statuses until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.period)
	defer t.Stop()
	held := time.NewTimer(0)
	held.Stop()
	defer held.Stop()
	for {
		tick := false
		select {
		case <-ctx.Done():
			return
		case <-m.notify:
		case <-held.C:
		case <-t.C:
			tick = true
		}
		held.Stop()
		if wait := m.syncBatch(ctx, tick); wait > 0 {
			held.Reset(wait)
		}
	}
}

// work is one pod to write, copied out of the lock when a writer takes
// it.
type work struct {
	uid      types.UID
	pod      *v1.Pod
	api      *v1.Pod // the base known, nil: read it
	status   v1.PodStatus
	version  uint64
	finished bool
}

// syncBatch writes what is due; tick is the periodic retry, when a
// static pod's mirror is read rather than waited for. It returns how soon
// a held first write falls due (0: none is held).
func (m *Manager) syncBatch(ctx context.Context, tick bool) time.Duration {
	now := time.Now()
	var due time.Duration
	m.mu.Lock()
	var todo []types.UID
	for uid, e := range m.entries {
		if !(e.due() || e.finished && !e.deleted && e.pod.DeletionTimestamp != nil && !kubetypes.IsStaticPod(e.pod)) {
			continue
		}
		if e.sent == 0 && !e.finished && e.pod.DeletionTimestamp == nil && starting(e.status) {
			if left := e.since.Add(m.hold).Sub(now); left > 0 {
				if due == 0 || left < due {
					due = left
				}
				continue
			}
		}
		if e.api == nil && kubetypes.IsStaticPod(e.pod) && !tick {
			continue // until ObserveMirror, or the next tick
		}
		todo = append(todo, uid)
	}
	m.mu.Unlock()
	// Each pod is in todo once, and batches follow one another: a pod's
	// writes stay in order.
	next := make(chan types.UID)
	var wg sync.WaitGroup
	for range min(m.writers, len(todo)) {
		wg.Go(func() {
			for uid := range next {
				m.write(ctx, uid)
			}
		})
	}
	for _, uid := range todo {
		if ctx.Err() != nil {
			break
		}
		next <- uid
	}
	close(next)
	wg.Wait()
	return due
}

// write syncs one pod's latest status and records the outcome.
func (m *Manager) write(ctx context.Context, uid types.UID) {
	m.mu.Lock()
	e := m.entries[uid]
	if e == nil {
		m.mu.Unlock()
		return // removed meanwhile
	}
	w := work{uid, e.pod, e.api, *e.status.DeepCopy(), e.version, e.finished}
	m.mu.Unlock()
	logger := klog.FromContext(ctx)
	api, deleted, err := m.syncPod(ctx, w)
	m.mu.Lock()
	defer m.mu.Unlock()
	e = m.entries[w.uid]
	if e != nil {
		switch {
		case api == nil:
			if w.api != nil && e.api == w.api {
				e.api = nil // rejected: read it next time
			}
		case e.api != nil && api.UID == e.api.UID:
			e.api = newer(e.api, api)
		case e.api == w.api:
			e.api = api
			// else a new mirror was observed during the write: it stays
			// the base, and due() sends it the status.
		}
	}
	if errors.Is(err, errNoMirror) {
		logger.V(4).Info("Static pod does not have a corresponding mirror pod; skipping", "pod", klog.KObj(w.pod))
		return
	}
	if err != nil {
		logger.Info("Failed to update status for pod", "pod", klog.KObj(w.pod), "podUID", w.uid, "err", err)
		return
	}
	if e != nil {
		e.sent = max(e.sent, w.version)
		e.deleted = e.deleted || deleted
		if api != nil {
			e.sentTo = api.UID
		}
	}
}

// syncPod writes one pod's status and, when due, deletes it; it says
// whether the pod is gone from the API, and returns the pod as the API
// answered (nil if it did not).
func (m *Manager) syncPod(ctx context.Context, w work) (_ *v1.Pod, gone bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pods := m.client.Pods(w.pod.Namespace)
	static := kubetypes.IsStaticPod(w.pod)
	api := w.api
	if api == nil {
		if api, err = pods.Get(ctx, w.pod.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			if static {
				// The mirror pod is not created yet (or was deleted and
				// is being created again): the static pod is not gone.
				return nil, false, errNoMirror
			}
			return nil, true, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
	if static {
		hash := w.pod.Annotations[kubetypes.ConfigHashAnnotationKey]
		if mh, ok := api.Annotations[kubetypes.ConfigMirrorAnnotationKey]; !ok || mh != hash {
			// No mirror (yet): nothing to report to; the mirror
			// reconciler creates it and a later pass writes.
			return nil, false, errNoMirror
		}
	} else if api.UID != w.uid {
		// Deleted and created again under the same name: not ours.
		return nil, true, nil
	}
	merged := Merge(api.Status, w.status, w.finished)
	patch, err := Patch(api.UID, api.Status, merged)
	if err != nil {
		return nil, false, err
	}
	if patch != nil {
		if api, err = pods.Patch(ctx, api.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			switch {
			case static && (apierrors.IsNotFound(err) || apierrors.IsConflict(err)):
				// The mirror this patch was for is gone; a new one
				// may come.
				return nil, false, errNoMirror
			case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
				return nil, true, nil
			}
			return nil, false, fmt.Errorf("patch status of pod %s/%s: %w", w.pod.Namespace, w.pod.Name, err)
		}
	}
	if static || !w.finished || api.DeletionTimestamp == nil || !terminal(api.Status.Phase) {
		return api, false, nil
	}
	// The last step of a graceful delete: the agent stopped everything.
	uid := api.UID
	err = pods.Delete(ctx, api.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return api, false, fmt.Errorf("delete pod %s/%s: %w", w.pod.Namespace, w.pod.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Pod fully terminated and removed from etcd", "pod", klog.KObj(w.pod))
	return nil, true, nil
}

// errNoMirror: a static pod's status waits for its mirror pod.
var errNoMirror = errors.New("static pod has no mirror pod yet")
