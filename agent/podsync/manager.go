// Package podsync runs the agent's pods: the kubelet's sync loop and its
// SyncPod, SyncTerminatingPod and SyncTerminatedPod over a runtime.Service.
// Manager is the entry point: it consumes the merge's operations (ADD,
// UPDATE, DELETE, REMOVE, RECONCILE), owns the pod workers (package
// podworkers), the status manager (package status) and the probes
// (package prober), relists the runtime every second to notice containers
// that exited (upstream's PLEG), and keeps house every two seconds once
// every source has been seen: it forgets finished pods that no source has
// any more and stops runtime pods that no source has (an agent restart
// after a pod was deleted).
//
// What to do is decided by pure functions: podactions.Compute (what to
// start and kill), podstatus.Generate (the API status), the podactions
// back-off; containerconfig builds what the runtime is given (package
// volumes sets up the volumes and gathers what it reads). This package
// calls the runtime and the API.
package podsync

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/containerconfig"
	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/podactions"
	"github.com/kite-project/kite/agent/podstatus"
	"github.com/kite-project/kite/agent/podworkers"
	"github.com/kite-project/kite/agent/prober"
	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/agent/runtimeclass"
	"github.com/kite-project/kite/agent/status"
	"github.com/kite-project/kite/agent/volumes"
)

// Periods, the kubelet's.
const (
	DefaultRelistPeriod       = time.Second
	DefaultHousekeepingPeriod = 2 * time.Second
)

// EventRecorder records events about pods and their containers
// (nodeevents.Recorder). Calls must not block.
type EventRecorder interface {
	Eventf(pod *v1.Pod, eventType, reason, messageFmt string, args ...any)
	ContainerEventf(pod *v1.Pod, container, eventType, reason, messageFmt string, args ...any)
}

// Options configures a Manager.
type Options struct {
	// NodeName is the node's name. Required.
	NodeName string
	// Runtime runs the containers. Required.
	Runtime runtime.Service
	// RootDir is the agent's --root-dir: volumes under
	// <RootDir>/pods/<uid>, logs under <RootDir>/pods/<ns>_<name>_<uid>.
	// Required.
	RootDir string
	// Client reaches the API server: configMaps and secrets, pod status,
	// the final delete. Nil is standalone: static pods only, no status
	// written.
	Client kubernetes.Interface
	// Events records pod events; nil logs them.
	Events EventRecorder
	// HostIPs are the node's addresses (hostIP, and podIP: pods use the
	// host's network).
	HostIPs []string
	// Allocatable is the node's allocatable resources (admission,
	// resourceFieldRef defaults, OOM score).
	Allocatable v1.ResourceList
	// ClusterDNS (--cluster-dns) and ClusterDomain (--cluster-domain)
	// configure the resolver of ClusterFirst pods (containerconfig.PodDNS).
	ClusterDNS    []string
	ClusterDomain string
	// MaxPods is --max-pods, the most pods admitted at once; zero is 110.
	MaxPods int
	// AppArmorHost is why the node cannot enforce AppArmor profiles (nil:
	// it can): pods that ask for one are refused at admission.
	AppArmorHost error
	// SeenAllSources says whether every source has sent its first
	// snapshot (the Agent's SeenAllSources): until then no runtime pod is
	// stopped for being unknown. Nil means always.
	SeenAllSources func() bool
	// PodNetwork says that the runtime gives pods that are not
	// hostNetwork a network namespace and addresses of their own (a
	// containerd with the agent's CNI configuration): their sandboxes ask
	// for one, and their podIPs are the sandbox's. Without it every pod
	// is in the node's network and has its addresses.
	PodNetwork bool
	// Periods; zero takes the defaults.
	RelistPeriod, HousekeepingPeriod, ResyncInterval time.Duration
	// StatusSyncPeriod is the status manager's retry period.
	StatusSyncPeriod time.Duration
	// BackOffInitial and BackOffMax bound the crash-loop back-off; zero
	// is 10 s and 5 min.
	BackOffInitial, BackOffMax time.Duration
}

// Manager runs the node's pods. Run it once.
type Manager struct {
	opts Options
	rt   runtime.Service
	// volumes sets up volumes and builds the containers' configurations.
	volumes *volumes.Manager
	status  *status.Manager // nil when standalone
	// runtimeClasses resolves pods' runtimeClassName; nil when
	// standalone, where (as for a kubelet without a client) the name is
	// not looked up and every sandbox gets the default handler.
	runtimeClasses *runtimeclass.Manager
	events         EventRecorder
	// hooks sends the httpGet lifecycle hooks: one client per agent,
	// never http.DefaultClient, whose settings any code of the process
	// may change.
	hooks   *http.Client
	seenAll func() bool

	runtimeName string
	workers     *podworkers.Workers
	prober      *prober.Manager
	// probes are the probe results the decisions read: the prober's, by
	// container instance; set before the workers start.
	probes probeResults
	// running guards against a second Run.
	running atomic.Bool

	// mu guards the per-pod state below, shared by the workers and the
	// loop; it is never held across a runtime or API call.
	mu      sync.Mutex
	waiting map[types.UID]map[string]podstatus.Waiting
	backOff map[types.UID]*podactions.BackOff
	// imageBackOff is the pull back-off of every pod's images.
	imageBackOff podactions.ImageBackOff
	last         map[types.UID]v1.PodStatus // standalone: the status last computed
	// resize is the in-place resize state of every pod (resize.go).
	resize resizeState
	// qos is the active pods the QoS tiers are sized from (qos.go);
	// guarded by its own lock.
	qos qosState
	// restoreErr is why the allocation checkpoint could not be read.
	restoreErr error
}

// runtimeHandler is the runtime handler of pod's RuntimeClass, "" for
// none or without a client.
func (m *Manager) runtimeHandler(ctx context.Context, pod *v1.Pod) (string, error) {
	if m.runtimeClasses == nil {
		return "", nil
	}
	return m.runtimeClasses.Handler(ctx, pod.Spec.RuntimeClassName)
}

// resolvConf is the node's resolver configuration, the base of pods'
// dnsConfig (the kubelet's --resolv-conf default).
const resolvConf = "/etc/resolv.conf"

// New checks opts and builds the Manager; Run starts it.
func New(opts Options) (*Manager, error) {
	if opts.NodeName == "" || opts.Runtime == nil || opts.RootDir == "" {
		return nil, errors.New("podsync: node name, runtime and root directory are required")
	}
	var vc volumes.Client
	if opts.Client != nil {
		vc = opts.Client.CoreV1()
	}
	_, runsImages := opts.Runtime.(runtime.ImageService)
	var hostDNS *runtimeapi.DNSConfig
	if b, err := os.ReadFile(resolvConf); err == nil {
		hostDNS = containerconfig.ParseResolvConf(b)
	}
	vm, err := volumes.New(volumes.Options{RootDir: opts.RootDir, Client: vc, NodeName: opts.NodeName, HostIPs: opts.HostIPs, Allocatable: opts.Allocatable,
		RunsImages: runsImages, HostDNS: hostDNS, ClusterDNS: opts.ClusterDNS, ClusterDomain: opts.ClusterDomain, PodNetwork: opts.PodNetwork})
	if err != nil {
		return nil, fmt.Errorf("podsync: %w", err)
	}
	m := &Manager{opts: opts, rt: opts.Runtime, volumes: vm, events: opts.Events, seenAll: opts.SeenAllSources, hooks: newHookClient(),
		waiting: map[types.UID]map[string]podstatus.Waiting{}, backOff: map[types.UID]*podactions.BackOff{},
		probes: noProbes{}, last: map[types.UID]v1.PodStatus{}, resize: newResizeState()}
	// The allocations of the agent's previous run; a checkpoint that
	// cannot be read is logged at Run and the agent starts from the specs.
	m.resize.restored, m.restoreErr = loadAllocations(opts.RootDir)
	if opts.Client != nil {
		if m.status, err = status.New(status.Options{Client: opts.Client.CoreV1(), SyncPeriod: opts.StatusSyncPeriod}); err != nil {
			return nil, fmt.Errorf("podsync: %w", err)
		}
		if m.runtimeClasses, err = runtimeclass.New(opts.Client.NodeV1(), 0); err != nil {
			return nil, fmt.Errorf("podsync: %w", err)
		}
	}
	if m.events == nil {
		m.events = logEvents{}
	}
	if m.seenAll == nil {
		m.seenAll = func() bool { return true }
	}
	return m, nil
}

// newHookClient is the client of httpGet lifecycle hooks, as the
// kubelet's insecureContainerLifecycleHTTPClient: an HTTPS hook is not
// verified (the agent knows no CA of the pod's; the client carries no
// credentials that could leak), redirects are followed to the same host
// only, and no connection is kept between hooks (so none outlives Run).
func newHookClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
			DisableKeepAlives: true,
			Proxy:             nil,
		},
		CheckRedirect: prober.SameHostRedirects,
	}
}

// Run consumes updates (the Agent's Updates) and runs the pods until ctx
// ends or updates is closed, then waits for every goroutine it started.
// Pods keep running when Run returns: stopping the agent stops no
// container.
func (m *Manager) Run(ctx context.Context, updates <-chan kubetypes.PodUpdate) {
	logger := klog.FromContext(ctx)
	if m.restoreErr != nil {
		logger.Error(m.restoreErr, "Pod allocations of the previous run lost; starting from the pods' specs")
	}
	if !m.running.CompareAndSwap(false, true) {
		logger.Error(nil, "Pod manager already ran; ignoring a second Run")
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// Everything started here ends with ctx: cancel first (Run may return
	// because updates was closed), then wait for all of it.
	defer func() {
		cancel()
		if m.workers != nil {
			m.workers.Wait()
		}
		if m.prober != nil {
			m.prober.Wait()
		}
		wg.Wait()
	}()

	if v, err := m.rt.Version(ctx); err == nil {
		m.runtimeName = v.GetRuntimeName()
	} else {
		logger.Error(err, "Container runtime version unknown")
	}
	var err error
	if m.prober, err = prober.New(ctx, prober.Options{Execer: m.rt, Recorder: m.events, HostIP: first(m.opts.HostIPs)}); err != nil {
		logger.Error(err, "Probes disabled")
	} else {
		m.probes = m.prober.Results()
	}
	if m.workers, err = podworkers.New(ctx, podworkers.Options{Syncer: m, ResyncInterval: m.opts.ResyncInterval}); err != nil {
		logger.Error(err, "Pod workers")
		return
	}
	if m.status != nil {
		wg.Go(func() { m.status.Run(ctx) })
	}
	wg.Go(func() { m.volumes.Run(ctx) })
	if m.runtimeClasses != nil {
		wg.Go(func() { m.runtimeClasses.Run(ctx) })
	}

	relist := time.NewTicker(orDefault(m.opts.RelistPeriod, DefaultRelistPeriod))
	defer relist.Stop()
	housekeeping := time.NewTicker(orDefault(m.opts.HousekeepingPeriod, DefaultHousekeepingPeriod))
	defer housekeeping.Stop()
	var probeUpdates <-chan prober.Update
	if m.prober != nil {
		probeUpdates = m.prober.Updates()
	}
	pods := map[types.UID]*v1.Pod{}  // what the sources have; this goroutine's
	rejected := map[types.UID]bool{} // pods admission refused; they never run
	seen := map[string]runtimeapi.ContainerState{}
	for {
		select {
		case <-ctx.Done():
			return
		case u, ok := <-updates:
			if !ok {
				return
			}
			m.handle(ctx, u, pods, rejected)
		case pu := <-probeUpdates:
			if p := pods[pu.PodUID]; p != nil {
				m.workers.UpdatePod(podworkers.Update{Type: podworkers.Sync, Pod: p})
			}
		case <-relist.C:
			seen = m.relist(ctx, seen, pods)
		case <-housekeeping.C:
			if m.seenAll() {
				m.housekeeping(ctx, pods, rejected)
			}
		}
	}
}

// handle dispatches one operation of the merge, as the kubelet's
// syncLoopIteration: DELETE is an update (the deletionTimestamp starts a
// graceful termination), REMOVE a kill.
func (m *Manager) handle(ctx context.Context, u kubetypes.PodUpdate, pods map[types.UID]*v1.Pod, rejected map[types.UID]bool) {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("SyncLoop "+u.Op.String(), "source", u.Source, "pods", klog.KObjSlice(u.Pods))
	// A mirror pod stands for a static pod and is never run (the Agent
	// keeps them from the sync loop already; this holds without it too).
	var kept []*v1.Pod
	for _, p := range u.Pods {
		if !kubetypes.IsMirrorPod(p) {
			kept = append(kept, p)
		}
	}
	u.Pods = kept
	switch u.Op {
	case kubetypes.ADD:
		sorted := append([]*v1.Pod(nil), u.Pods...)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].CreationTimestamp.Before(&sorted[j].CreationTimestamp) })
		for _, p := range sorted {
			pods[p.UID] = p
			if rejected[p.UID] {
				continue
			}
			if r := m.admit(p, pods); r != nil {
				rejected[p.UID] = true
				m.reject(ctx, p, r)
				continue
			}
			m.workers.UpdatePod(podworkers.Update{Type: podworkers.Create, Pod: p})
		}
	case kubetypes.UPDATE, kubetypes.DELETE:
		for _, p := range u.Pods {
			pods[p.UID] = p
			if rejected[p.UID] {
				// Never run; a deletion completes at once.
				if m.status != nil {
					if st, ok := m.status.Status(p.UID); ok {
						m.status.TerminatePod(p, st)
					}
				}
				continue
			}
			m.workers.UpdatePod(podworkers.Update{Type: podworkers.Modify, Pod: p})
		}
	case kubetypes.REMOVE:
		for _, p := range u.Pods {
			delete(pods, p.UID)
			if rejected[p.UID] {
				delete(rejected, p.UID)
				m.forget(p.UID)
				continue
			}
			m.workers.UpdatePod(podworkers.Update{Type: podworkers.Kill, Pod: p})
		}
	case kubetypes.RECONCILE:
		// Only the API status changed: rewrite it if someone else did.
		for _, p := range u.Pods {
			if _, ok := pods[p.UID]; ok {
				pods[p.UID] = p
				if m.status != nil {
					m.status.Reconcile(p)
				}
			}
		}
	default:
		logger.Error(nil, "Invalid operation type received", "op", u.Op)
	}
}

// ObserveMirror hands a mirror pod, as the agent's watch sees it, to the
// status manager, which reports its static pod's status through it.
func (m *Manager) ObserveMirror(mirror *v1.Pod) {
	if m.status != nil {
		m.status.ObserveMirror(mirror)
	}
}

// admit runs the kubelet's admission for a pod new to the workers: it
// must fit beside the active pods (not yet terminated), and the node must
// be able to enforce its AppArmor profiles. Pods the workers
// know already, pods in a terminal phase or being deleted, and static pods
// are not checked. Each pod counts with its allocation, as the kubelet's
// allocation manager admits (AddPod): after an agent restart a pod whose
// resize was deferred is admitted with what it was allocated, not
// rejected for the resize the node could not fit.
func (m *Manager) admit(pod *v1.Pod, pods map[types.UID]*v1.Pod) *podactions.Rejection {
	if m.workers.PodStatus(pod.UID).Known || pod.DeletionTimestamp != nil || kubetypes.IsStaticPod(pod) ||
		pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return nil
	}
	var active []*v1.Pod
	for uid, p := range pods {
		if st := m.workers.PodStatus(uid); uid != pod.UID && st.Known && !st.Terminated {
			active = append(active, m.allocatedPod(p))
		}
	}
	if r := podactions.Admit(m.allocatedPod(pod), active, m.opts.Allocatable, m.opts.MaxPods); r != nil {
		return r
	}
	if err := containerconfig.AppArmorUnenforceable(pod, m.opts.AppArmorHost); err != nil {
		return &podactions.Rejection{Reason: "AppArmor", Message: fmt.Sprintf("Cannot enforce AppArmor: %v", err)}
	}
	return nil
}

// reject fails a pod that admission refused, as the kubelet's rejectPod:
// a Warning event and the status Failed with the reason and "Pod was
// rejected: <message>". It gets no worker.
func (m *Manager) reject(ctx context.Context, pod *v1.Pod, r *podactions.Rejection) {
	klog.FromContext(ctx).Info("Pod rejected", "pod", klog.KObj(pod), "reason", r.Reason, "message", r.Message)
	m.events.Eventf(pod, v1.EventTypeWarning, r.Reason, "%s", r.Message)
	st := *pod.Status.DeepCopy()
	st.Phase, st.Reason, st.Message = v1.PodFailed, r.Reason, "Pod was rejected: "+r.Message
	if m.status != nil {
		m.status.TerminatePod(pod, st)
	}
}

// relist notices container state changes in the runtime and syncs their
// pods, as upstream's PLEG; it returns the states seen.
func (m *Manager) relist(ctx context.Context, before map[string]runtimeapi.ContainerState, pods map[types.UID]*v1.Pod) map[string]runtimeapi.ContainerState {
	list, err := m.rt.ListContainers(ctx, nil)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Relist failed", "err", err)
		return before
	}
	now := make(map[string]runtimeapi.ContainerState, len(list))
	changed := map[types.UID]bool{}
	for _, c := range list {
		now[c.Id] = c.State
		// A container just created is its worker's, which starts it in
		// the same sync; its start (or failure to start) is the change
		// that syncs the pod, so the pods of a burst are not synced once
		// more for each container caught between create and start.
		if s, ok := before[c.Id]; (!ok || s != c.State) && c.State != runtimeapi.ContainerState_CONTAINER_CREATED {
			changed[types.UID(c.Labels[runtime.LabelPodUID])] = true
		}
	}
	for id := range before {
		if _, ok := now[id]; !ok {
			changed[""] = true // removed: its pod synced itself
		}
	}
	for uid := range changed {
		if p := pods[uid]; p != nil {
			m.workers.UpdatePod(podworkers.Update{Type: podworkers.Sync, Pod: p})
		}
	}
	return now
}

// housekeeping forgets finished pods no source has, tells workers of
// pods no source has to stop, creates again the pods that came back with
// the UID of a finished worker (a static pod whose manifest went and came
// back), and hands runtime pods that no worker and no source knows to a
// worker of their UID to be stopped and removed, as upstream's
// HandlePodCleanups: an orphan's removal and a new pod of the same UID
// are then one worker's work, one after the other, and the removal never
// reaches the new pod's sandbox or volumes.
func (m *Manager) housekeeping(ctx context.Context, pods map[types.UID]*v1.Pod, rejected map[types.UID]bool) {
	desired := make(map[types.UID]bool, len(pods))
	for uid := range pods {
		desired[uid] = true
	}
	for _, uid := range m.workers.SyncKnownPods(desired) {
		m.forget(uid)
	}
	m.refreshQOS(ctx)
	m.dropRestored(ctx, desired)
	known := m.workers.Known()
	for uid, p := range pods {
		if !known[uid] && !rejected[uid] {
			klog.FromContext(ctx).V(2).Info("Pod created again with the UID of a finished pod; starting it anew", "pod", klog.KObj(p), "podUID", uid)
			m.workers.UpdatePod(podworkers.Update{Type: podworkers.Create, Pod: p})
			known[uid] = true
		}
	}
	sandboxes, err := m.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return
	}
	containers, err := m.rt.ListContainers(ctx, nil)
	if err != nil {
		return
	}
	orphans := map[types.UID]*v1.Pod{}
	orphan := func(uid types.UID, namespace, name string) {
		if !desired[uid] && !known[uid] && orphans[uid] == nil {
			orphans[uid] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid, Namespace: namespace, Name: name}}
		}
	}
	for _, s := range sandboxes {
		orphan(types.UID(s.GetMetadata().GetUid()), s.GetMetadata().GetNamespace(), s.GetMetadata().GetName())
	}
	for _, c := range containers {
		orphan(types.UID(c.Labels[runtime.LabelPodUID]), c.Labels[runtime.LabelPodNamespace], c.Labels[runtime.LabelPodName])
	}
	grace := int64(minimumGracePeriod)
	for uid, p := range orphans {
		klog.FromContext(ctx).Info("Stopping a runtime pod that no source has", "pod", klog.KObj(p), "podUID", uid)
		m.workers.UpdatePod(podworkers.Update{Type: podworkers.Kill, Pod: p, RuntimeOnly: true, GracePeriod: &grace})
	}
}

// SyncTerminatingRuntimePod stops and removes an orphan runtime pod and
// its directory; its worker holds the UID meanwhile.
func (m *Manager) SyncTerminatingRuntimePod(ctx context.Context, pod *v1.Pod) error {
	if err := m.removeRuntimePod(ctx, pod.UID); err != nil {
		return fmt.Errorf("remove runtime pod %s/%s (%s): %w", pod.Namespace, pod.Name, pod.UID, err)
	}
	return nil
}

// forget drops what the agent keeps of a pod whose worker is gone.
func (m *Manager) forget(uid types.UID) {
	if m.status != nil {
		m.status.RemovePod(uid)
	}
	if m.prober != nil {
		m.prober.RemovePod(uid)
	}
	m.volumes.Forget(uid)
	m.qos.mu.Lock()
	delete(m.qos.pods, uid) // gone at its termination already, unless it never ran
	m.qos.mu.Unlock()
	m.mu.Lock()
	delete(m.waiting, uid)
	delete(m.backOff, uid)
	delete(m.last, uid)
	m.resize.forget(uid)
	m.mu.Unlock()
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// probeResults are what the decisions need of the probes.
type probeResults interface {
	podactions.Probes
	podstatus.Probes
}

var _ probeResults = prober.Results{}

// noProbes stands in without a prober: running containers are alive,
// started and ready.
type noProbes struct{ podactions.NoProbes }

func (noProbes) Ready(string) bool   { return true }
func (noProbes) Started(string) bool { return true }

var _ probeResults = noProbes{}

// logEvents is the EventRecorder of a standalone agent: the log.
type logEvents struct{}

func (logEvents) Eventf(pod *v1.Pod, eventType, reason, messageFmt string, args ...any) {
	klog.V(2).InfoS("Event", "pod", klog.KObj(pod), "type", eventType, "reason", reason, "message", fmt.Sprintf(messageFmt, args...))
}

func (logEvents) ContainerEventf(pod *v1.Pod, container, eventType, reason, messageFmt string, args ...any) {
	klog.V(2).InfoS("Event", "pod", klog.KObj(pod), "container", container, "type", eventType, "reason", reason, "message", fmt.Sprintf(messageFmt, args...))
}
