package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"runtime"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/storage/localpath"
	kiteversion "github.com/kite-project/kite/version"
)

// The kubelet's defaults.
const (
	DefaultMaxPods = 110
	DefaultPort    = 10250
	// DefaultUpdateInterval is nodeStatusUpdateFrequency: how often the
	// status is computed (and patched if it changed).
	DefaultUpdateInterval = 10 * time.Second
	// DefaultReportInterval is nodeStatusReportFrequency: the longest an
	// unchanged status goes unpatched.
	DefaultReportInterval = 5 * time.Minute
	// DefaultLeaseDurationSeconds and the renew interval (a quarter of
	// it) are the kubelet's node lease.
	DefaultLeaseDurationSeconds = 40
	DefaultRenewInterval        = DefaultLeaseDurationSeconds * time.Second / 4
	// LeaseNamespace holds one Lease per node.
	LeaseNamespace = v1.NamespaceNodeLease
)

// Options configures a Manager.
type Options struct {
	// Client reaches the API server. Required.
	Client kubernetes.Interface
	// NodeName is the node. Required.
	NodeName string
	// MaxPods is capacity.pods; 0 means DefaultMaxPods.
	MaxPods int64
	// Port is the agent's daemon endpoint port; 0 means DefaultPort.
	Port int32
	// NodeIP is the node's InternalIP; nil means Host.InternalIP().
	NodeIP net.IP
	// RootDir is where the agent keeps its files: its file system is the
	// node's ephemeral storage. "" leaves ephemeral-storage out.
	RootDir string
	// RuntimeVersion is nodeInfo.containerRuntimeVersion,
	// "<name>://<version>".
	RuntimeVersion string
	// Health returns why the node cannot run pods now (the runtime is
	// down, ...; none means Ready) and what the runtime cannot do while
	// it runs pods (Info.Degraded). Nil means always ready.
	Health func(ctx context.Context) (notReady []string, degraded []v1.NodeCondition)
	// Images lists the runtime's images for status.images; nil (a
	// runtime without images) reports none. A failed listing returns nil
	// and keeps what the Node has.
	Images func(ctx context.Context) []v1.ContainerImage
	// Labels are added to the Node at registration; they win over the
	// defaults, as the kubelet's --node-labels do.
	Labels map[string]string
	// LeaseDurationSeconds is the Lease's duration (the kubelet's
	// nodeLeaseDurationSeconds); 0 means DefaultLeaseDurationSeconds.
	LeaseDurationSeconds int32
	// UpdateInterval, ReportInterval and RenewInterval: zero means the
	// defaults above, RenewInterval a quarter of the Lease's duration.
	UpdateInterval, ReportInterval, RenewInterval time.Duration
	// Host reads the machine; the zero value reads this one.
	Host Host
	// EvictionHard are the thresholds of the pressure conditions (the
	// kubelet's evictionHard); nil means DefaultEvictionHard.
	EvictionHard Thresholds
	// PressureTransitionPeriod is how long a pressure condition stays
	// after its threshold was last met (the kubelet's
	// evictionPressureTransitionPeriod, DefaultPressureTransitionPeriod
	// in the agent's configuration); zero clears it at the first status
	// that no longer meets it.
	PressureTransitionPeriod time.Duration
}

// Manager registers the Node and keeps its status and Lease current. Its
// state is owned by the goroutine of Run.
type Manager struct {
	opts Options
	// registered is closed once the Node exists.
	registered chan struct{}
	// last is the status the API holds as far as Run knows, and when it
	// was last written.
	last       *v1.NodeStatus
	lastReport time.Time
	nodeUID    types.UID
	lease      *coordinationv1.Lease
	// pressureSeen is when each pressure's threshold was last met
	// (HoldPressures).
	pressureSeen PressureSeen
}

// New checks opts and returns a Manager; nothing is written until Run.
func New(opts Options) (*Manager, error) {
	if opts.Client == nil || opts.NodeName == "" {
		return nil, errors.New("node: a client and a node name are required")
	}
	if opts.MaxPods == 0 {
		opts.MaxPods = DefaultMaxPods
	}
	if opts.Port == 0 {
		opts.Port = DefaultPort
	}
	if opts.UpdateInterval == 0 {
		opts.UpdateInterval = DefaultUpdateInterval
	}
	if opts.ReportInterval == 0 {
		opts.ReportInterval = DefaultReportInterval
	}
	if opts.LeaseDurationSeconds <= 0 {
		opts.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if opts.RenewInterval == 0 {
		opts.RenewInterval = time.Duration(opts.LeaseDurationSeconds) * time.Second / 4
	}
	if opts.NodeIP == nil {
		opts.NodeIP = opts.Host.InternalIP()
	}
	return &Manager{opts: opts, registered: make(chan struct{})}, nil
}

// Registered is closed once the Node has been registered.
func (m *Manager) Registered() <-chan struct{} { return m.registered }

// Run registers the Node, retrying from 100 ms doubling to 7 s as the
// kubelet does, then keeps its status and Lease current until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	log := klog.FromContext(ctx)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 7*time.Second) {
		err := m.register(ctx)
		if err == nil {
			log.Info("Registered node")
			close(m.registered)
			break
		}
		if ctx.Err() != nil {
			return
		}
		log.Error(err, "Cannot register node, retrying", "after", wait)
		if !sleep(ctx, wait) {
			return
		}
	}
	m.renewLease(ctx)
	status := time.NewTicker(m.opts.UpdateInterval)
	defer status.Stop()
	lease := time.NewTicker(m.opts.RenewInterval)
	defer lease.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-status.C:
			if err := m.updateStatus(ctx); err != nil && ctx.Err() == nil {
				log.Error(err, "Cannot update node status")
			}
		case <-lease.C:
			m.renewLease(ctx)
		}
	}
}

// info is what the host and the agent report now, the pressures held
// for the transition period. Called by Run's goroutine only.
func (m *Manager) info(ctx context.Context) Info {
	info := HostInfo(m.opts.Host, m.opts.RootDir, m.opts.MaxPods, m.opts.EvictionHard)
	m.pressureSeen, info.MemoryPressure, info.DiskPressure, info.PIDPressure = HoldPressures(
		m.pressureSeen, time.Now(), m.opts.PressureTransitionPeriod, info.MemoryPressure, info.DiskPressure, info.PIDPressure)
	info.NodeInfo.ContainerRuntimeVersion = m.opts.RuntimeVersion
	info.Port = m.opts.Port
	info.Addresses = []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: m.opts.NodeIP.String()},
		{Type: v1.NodeHostName, Address: m.opts.NodeName},
	}
	if m.opts.Health != nil {
		info.NotReady, info.Degraded = m.opts.Health(ctx)
	}
	if m.opts.Images != nil {
		info.Images = m.opts.Images(ctx)
	}
	return info
}

// HostInfo is what h reports of the machine: capacity (the ephemeral
// storage of rootDir's file system, if given; maxPods pods), nodeInfo and
// the pressure verdicts of the hard eviction thresholds (nil: the
// kubelet's defaults, DefaultEvictionHard).
func HostInfo(h Host, rootDir string, maxPods int64, hard Thresholds) Info {
	sys := h.SystemInfo()
	sys.KubeletVersion = kiteversion.GitVersion
	if hard == nil {
		hard, _ = ParseEvictionHard(DefaultEvictionHard())
	}
	info := Info{CPUs: int64(runtime.NumCPU()), MaxPods: maxPods, NodeInfo: sys, EvictionHard: hard}
	var obs Observations
	obs.MemoryCapacity, obs.MemoryAvailable = h.Memory()
	info.MemoryBytes = obs.MemoryCapacity
	if rootDir != "" {
		obs.DiskCapacity, obs.DiskAvailable = h.Disk(rootDir)
		obs.InodesCapacity, obs.InodesFree = h.Inodes(rootDir)
		info.EphemeralStorageBytes = obs.DiskCapacity
	}
	if used, max := h.PIDs(); max > 0 {
		obs.PIDCapacity, obs.PIDAvailable = max, max-used
	}
	info.MemoryPressure, info.DiskPressure, info.PIDPressure = Pressures(obs, hard)
	return info
}

// annotations adds the agent's own annotations to a Node's: where its
// local-path volumes live (<root>/storage), which the server's local
// provisioner cannot know of a remote agent (docs/storage.md).
func (m *Manager) annotations(have map[string]string) map[string]string {
	if m.opts.RootDir == "" {
		return have
	}
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	out[localpath.DirAnnotation] = localpath.Dir(m.opts.RootDir)
	return out
}

// register creates the Node or, when a previous run created it, sets its
// default labels and status, as the kubelet's tryRegisterWithAPIServer.
func (m *Manager) register(ctx context.Context) error {
	nodes := m.opts.Client.CoreV1().Nodes()
	now := metav1.Now()
	status := Build(m.info(ctx), nil, now)
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        m.opts.NodeName,
			Labels:      m.labels(),
			Annotations: m.annotations(map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"}),
		},
		Status: status,
	}
	// A Node is created with its status, as upstream's node strategy allows.
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err == nil {
		m.remember(created)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", m.opts.NodeName, err)
	}
	old, err := nodes.Get(ctx, m.opts.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read node %s: %w", m.opts.NodeName, err)
	}
	want := old.DeepCopy()
	for k, v := range m.labels() {
		if want.Labels == nil {
			want.Labels = map[string]string{}
		}
		if _, ok := want.Labels[k]; !ok {
			want.Labels[k] = v
		}
	}
	want.Annotations = m.annotations(want.Annotations)
	if len(want.Labels) != len(old.Labels) || !maps.Equal(want.Annotations, old.Annotations) {
		if old, err = patch(ctx, m.opts.Client, old, want, ""); err != nil {
			return fmt.Errorf("label node %s: %w", m.opts.NodeName, err)
		}
		want = old.DeepCopy()
	}
	want.Status = Build(m.info(ctx), &old.Status, now)
	updated, err := patch(ctx, m.opts.Client, old, want, "status")
	if err != nil {
		return fmt.Errorf("patch the status of node %s: %w", m.opts.NodeName, err)
	}
	m.remember(updated)
	return nil
}

func (m *Manager) labels() map[string]string {
	l := map[string]string{
		v1.LabelHostname:          m.opts.NodeName,
		v1.LabelOSStable:          runtime.GOOS,
		v1.LabelArchStable:        runtime.GOARCH,
		"beta.kubernetes.io/os":   runtime.GOOS,
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	for k, v := range m.opts.Labels {
		l[k] = v
	}
	return l
}

func (m *Manager) remember(n *v1.Node) {
	m.last, m.lastReport, m.nodeUID = n.Status.DeepCopy(), time.Now(), n.UID
}

// updateStatus patches the status if it changed, or if the report period
// is up; the kubelet adds a random delay of up to half the period after a
// change so that nodes do not report in step.
func (m *Manager) updateStatus(ctx context.Context) error {
	next := Build(m.info(ctx), m.last, metav1.Now())
	if !Changed(m.last, &next) && time.Since(m.lastReport) < m.opts.ReportInterval {
		return nil
	}
	nodes := m.opts.Client.CoreV1().Nodes()
	old, err := nodes.Get(ctx, m.opts.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Deleted under us: register again, as the kubelet does on restart.
		return m.register(ctx)
	}
	if err != nil {
		return fmt.Errorf("read node %s: %w", m.opts.NodeName, err)
	}
	want := old.DeepCopy()
	want.Status = Build(m.info(ctx), &old.Status, metav1.Now())
	updated, err := patch(ctx, m.opts.Client, old, want, "status")
	if err != nil {
		return fmt.Errorf("patch the status of node %s: %w", m.opts.NodeName, err)
	}
	m.remember(updated)
	m.lastReport = m.lastReport.Add(-time.Duration(rand.Int64N(int64(m.opts.ReportInterval / 2))))
	return nil
}

// patch sends the strategic merge patch from old to want, to the node or
// to one of its subresources.
func patch(ctx context.Context, cs kubernetes.Interface, old, want *v1.Node, subresource string) (*v1.Node, error) {
	a, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(want)
	if err != nil {
		return nil, err
	}
	p, err := strategicpatch.CreateTwoWayMergePatch(a, b, v1.Node{})
	if err != nil {
		return nil, fmt.Errorf("make the patch: %w", err)
	}
	var sub []string
	if subresource != "" {
		sub = []string{subresource}
	}
	return cs.CoreV1().Nodes().Patch(ctx, old.Name, types.StrategicMergePatchType, p, metav1.PatchOptions{}, sub...)
}

// renewLease creates or renews the node's Lease: holder the node, its duration,
// renewTime now, owned by the Node (so that deleting the Node deletes
// it). Failures are logged; the next tick tries again.
func (m *Manager) renewLease(ctx context.Context) {
	leases := m.opts.Client.CoordinationV1().Leases(LeaseNamespace)
	want := func(l *coordinationv1.Lease) *coordinationv1.Lease {
		l = l.DeepCopy()
		l.Name, l.Namespace = m.opts.NodeName, LeaseNamespace
		l.Spec.HolderIdentity = ptr.To(m.opts.NodeName)
		l.Spec.LeaseDurationSeconds = ptr.To(m.opts.LeaseDurationSeconds)
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		if m.nodeUID != "" {
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: m.opts.NodeName, UID: m.nodeUID}}
		}
		return l
	}
	var err error
	if m.lease != nil {
		var l *coordinationv1.Lease
		if l, err = leases.Update(ctx, want(m.lease), metav1.UpdateOptions{}); err == nil {
			m.lease = l
			return
		}
	}
	// No copy, or a stale one: read it, or create it.
	l, err := leases.Get(ctx, m.opts.NodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		l, err = leases.Create(ctx, want(&coordinationv1.Lease{}), metav1.CreateOptions{})
	case err == nil:
		l, err = leases.Update(ctx, want(l), metav1.UpdateOptions{})
	}
	if err != nil {
		m.lease = nil
		if ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Cannot renew the node lease")
		}
		return
	}
	m.lease = l
}

// sleep waits d or until ctx ends; it says whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
