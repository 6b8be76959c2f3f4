// Package status writes the statuses of the agent's pods to the API
// server, as the kubelet's status manager (pkg/kubelet/status) does:
//
//   - the pod workers set a pod's status whenever they compute it; a status
//     equal to the one set before is ignored, so nothing is written when
//     nothing changed;
//   - one goroutine writes changed statuses as strategic merge patches to
//     pods/<name>/status, carrying metadata.uid so that the patch fails
//     rather than reach a pod of the same name created since (upstream's
//     PatchPodStatus); an empty diff is not sent; failures are retried;
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
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
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
}

// Manager keeps the latest status of each pod and writes it. Its methods
// are safe for concurrent use; writing happens in Run.
type Manager struct {
	client corev1client.PodsGetter
	period time.Duration
	notify chan struct{}

	// mu guards entries; it is never held across an API call.
	mu      sync.Mutex
	entries map[types.UID]*entry
}

type entry struct {
	pod     *v1.Pod
	status  v1.PodStatus
	version uint64 // bumped by every change
	sent    uint64 // the version last written
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
	return &Manager{client: opts.Client, period: period, notify: make(chan struct{}, 1), entries: map[types.UID]*entry{}}, nil
}

// SetPodStatus records pod's status. It is ignored when equal to the status
// recorded before, unless the pod is being deleted.
func (m *Manager) SetPodStatus(pod *v1.Pod, status v1.PodStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[pod.UID]
	if e == nil {
		e = &entry{}
		m.entries[pod.UID] = e
	} else if equality.Semantic.DeepEqual(e.status, status) && pod.DeletionTimestamp == nil {
		e.pod = pod
		return
	}
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
// container without a terminated state is marked ContainerStatusUnknown
// with exit code 137 (whether it succeeded is unknown), and a pod still
// Pending or Running becomes Failed (static pods excepted, upstream
// #116484), so that the API never keeps a stopped pod in a live phase.
func (m *Manager) TerminatePod(pod *v1.Pod, status v1.PodStatus) {
	status = Terminated(pod, status)
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[pod.UID]
	if e == nil {
		e = &entry{}
		m.entries[pod.UID] = e
	}
	e.pod, e.status, e.finished = pod, *status.DeepCopy(), true
	e.version++
	m.signal()
}

// Reconcile compares the API's version of the pod (from the agent's
// watch) with the status recorded for it, and writes the status again if
// the API's differs in what the agent owns: another writer changed it, as
// upstream's needsReconcile.
func (m *Manager) Reconcile(api *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[api.UID]
	if e == nil || e.version > e.sent || kubetypes.IsStaticPod(e.pod) {
		return // unknown, a write pending anyway, or reported via a mirror
	}
	patch, err := Patch(api.UID, api.Status, Merge(api.Status, e.status, e.finished))
	if err == nil && patch != nil {
		e.version++
		m.signal()
	}
}

// Terminated is status with every container terminated and a terminal
// phase, as TerminatePod records it.
func Terminated(pod *v1.Pod, status v1.PodStatus) v1.PodStatus {
	status = *status.DeepCopy()
	for _, list := range [][]v1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses} {
		for i := range list {
			if list[i].State.Terminated != nil {
				continue
			}
			list[i].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was terminated", ExitCode: 137}}
			list[i].Ready = false
		}
	}
	if !kubetypes.IsStaticPod(pod) && !terminal(status.Phase) {
		status.Phase = v1.PodFailed
	}
	return status
}

// RemovePod forgets the pod once its worker is gone.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
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
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.notify:
		case <-t.C:
		}
		m.syncBatch(ctx)
	}
}

// work is one pod to write, copied out of the lock.
type work struct {
	uid      types.UID
	pod      *v1.Pod
	status   v1.PodStatus
	version  uint64
	finished bool
}

func (m *Manager) syncBatch(ctx context.Context) {
	m.mu.Lock()
	var todo []work
	for uid, e := range m.entries {
		if e.version > e.sent || e.finished && !e.deleted && e.pod.DeletionTimestamp != nil && !kubetypes.IsStaticPod(e.pod) {
			todo = append(todo, work{uid, e.pod, *e.status.DeepCopy(), e.version, e.finished})
		}
	}
	m.mu.Unlock()
	logger := klog.FromContext(ctx)
	for _, w := range todo {
		if ctx.Err() != nil {
			return
		}
		deleted, err := m.syncPod(ctx, w)
		if errors.Is(err, errNoMirror) {
			logger.V(4).Info("Static pod does not have a corresponding mirror pod; skipping", "pod", klog.KObj(w.pod))
			continue
		}
		if err != nil {
			logger.Info("Failed to update status for pod", "pod", klog.KObj(w.pod), "podUID", w.uid, "err", err)
			continue
		}
		m.mu.Lock()
		if e := m.entries[w.uid]; e != nil {
			e.sent = max(e.sent, w.version)
			e.deleted = e.deleted || deleted
		}
		m.mu.Unlock()
	}
}

// syncPod writes one pod's status and, when due, deletes it; it says
// whether the pod is gone from the API.
func (m *Manager) syncPod(ctx context.Context, w work) (gone bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pods := m.client.Pods(w.pod.Namespace)
	static := kubetypes.IsStaticPod(w.pod)
	api, err := pods.Get(ctx, w.pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if static {
			// The mirror pod is not created yet (or was deleted and is
			// being created again): the static pod is not gone.
			return false, errNoMirror
		}
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if static {
		hash := w.pod.Annotations[kubetypes.ConfigHashAnnotationKey]
		if mh, ok := api.Annotations[kubetypes.ConfigMirrorAnnotationKey]; !ok || mh != hash {
			// No mirror (yet): nothing to report to; the mirror
			// reconciler creates it and a later pass writes.
			return false, errNoMirror
		}
	} else if api.UID != w.uid {
		// Deleted and created again under the same name: not ours.
		return true, nil
	}
	merged := Merge(api.Status, w.status, w.finished)
	patch, err := Patch(api.UID, api.Status, merged)
	if err != nil {
		return false, err
	}
	if patch != nil {
		if api, err = pods.Patch(ctx, api.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return true, nil
			}
			return false, fmt.Errorf("patch status of pod %s/%s: %w", w.pod.Namespace, w.pod.Name, err)
		}
	}
	if static || !w.finished || api.DeletionTimestamp == nil || !terminal(api.Status.Phase) {
		return false, nil
	}
	// The last step of a graceful delete: the agent stopped everything.
	uid := api.UID
	err = pods.Delete(ctx, api.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return false, fmt.Errorf("delete pod %s/%s: %w", w.pod.Namespace, w.pod.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Pod fully terminated and removed from etcd", "pod", klog.KObj(w.pod))
	return true, nil
}

// errNoMirror: a static pod's status waits for its mirror pod.
var errNoMirror = errors.New("static pod has no mirror pod yet")

func terminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// owned says whether the agent owns a condition type; others are kept as
// the API has them.
func owned(t v1.PodConditionType) bool {
	switch t {
	case v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled:
		return true
	}
	return false
}

// Merge is the status to write over the API's: the agent's, with the
// conditions it does not own as the API has them, and, until the worker
// finished (finished false), the API's phase instead of a terminal one, as
// upstream's mergePodStatus. A terminal pod is never Ready.
func Merge(api, status v1.PodStatus, finished bool) v1.PodStatus {
	out := *status.DeepCopy()
	var conds []v1.PodCondition
	for _, c := range out.Conditions {
		if owned(c.Type) {
			conds = append(conds, c)
		}
	}
	for _, c := range api.Conditions {
		if !owned(c.Type) {
			conds = append(conds, c)
		}
	}
	out.Conditions = conds
	if terminal(out.Phase) && !terminal(api.Phase) && !finished {
		out.Phase, out.Reason, out.Message = api.Phase, api.Reason, api.Message
	}
	if terminal(out.Phase) {
		for i := range out.Conditions {
			if t := out.Conditions[i].Type; (t == v1.PodReady || t == v1.ContainersReady) && out.Conditions[i].Status == v1.ConditionTrue {
				out.Conditions[i].Status = v1.ConditionFalse
			}
		}
	}
	return out
}

// Patch is the strategic merge patch from old to status with uid as a
// precondition, as upstream's PatchPodStatus; nil when nothing changed.
func Patch(uid types.UID, old, status v1.PodStatus) ([]byte, error) {
	oldData, err := json.Marshal(v1.Pod{Status: old})
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: status})
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("status patch: %w", err)
	}
	if string(patch) == fmt.Sprintf(`{"metadata":{"uid":%q}}`, uid) {
		return nil, nil
	}
	return patch, nil
}
