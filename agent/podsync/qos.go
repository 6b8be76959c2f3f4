package podsync

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/containerconfig"
	"github.com/kite-project/kite/agent/runtime"
	"github.com/kite-project/kite/apis/core/qos"
)

// qosRefreshPeriod is how often housekeeping writes the QoS tiers again
// whatever changed, as the kubelet's periodic UpdateCgroups (a minute):
// it catches a resize of a Burstable pod's cpu request and a tier
// changed behind the agent's back.
const qosRefreshPeriod = time.Minute

// qosState is the active pods the QoS tiers are sized from (the kubelet's
// activePods): a pod joins at its first sync and leaves when it is being
// stopped.
type qosState struct {
	// mu serialises a snapshot of pods and the writing of the tiers
	// from it, so that a write of older pods never lands after a newer
	// one. Never held by Manager.mu's holders.
	mu      sync.Mutex
	pods    map[types.UID]*v1.Pod
	written time.Time // when the tiers were last written
}

// podCgroupParent names the cgroup parent of pod's sandbox by its class
// in sb, for a runtime with QoS tiers; the sandbox config of every sync
// says it, as the kubelet's, since the runtime puts each new container
// under the parent the call names.
func (m *Manager) podCgroupParent(pod *v1.Pod, parent *string) {
	if q, ok := m.rt.(runtime.QOSCgroups); ok {
		*parent = q.PodCgroupParent(string(pod.UID), string(qos.GetPodQOS(pod)))
	}
}

// podActive records pod as active; the tiers are written when it is new
// to them (its first sync: a pod started, or adopted after an agent
// restart) or always says so (a sandbox is about to be made, as the
// kubelet updates its QoS cgroups before it creates a pod's cgroup).
func (m *Manager) podActive(ctx context.Context, pod *v1.Pod, always bool) {
	q, ok := m.rt.(runtime.QOSCgroups)
	if !ok {
		return
	}
	m.qos.mu.Lock()
	defer m.qos.mu.Unlock()
	if m.qos.pods == nil {
		m.qos.pods = map[types.UID]*v1.Pod{}
	}
	_, known := m.qos.pods[pod.UID]
	m.qos.pods[pod.UID] = pod
	if known && !always {
		return
	}
	m.writeQOSLocked(ctx, q)
}

// podInactive drops pod from the active pods and writes the tiers, as the
// kubelet's killPod updates its QoS cgroups once the pod's containers
// are stopped.
func (m *Manager) podInactive(ctx context.Context, uid types.UID) {
	q, ok := m.rt.(runtime.QOSCgroups)
	if !ok {
		return
	}
	m.qos.mu.Lock()
	defer m.qos.mu.Unlock()
	if _, known := m.qos.pods[uid]; !known {
		return
	}
	delete(m.qos.pods, uid)
	m.writeQOSLocked(ctx, q)
}

// refreshQOS writes the tiers again when qosRefreshPeriod has passed
// since the last write (housekeeping).
func (m *Manager) refreshQOS(ctx context.Context) {
	q, ok := m.rt.(runtime.QOSCgroups)
	if !ok {
		return
	}
	m.qos.mu.Lock()
	defer m.qos.mu.Unlock()
	if time.Since(m.qos.written) >= qosRefreshPeriod {
		m.writeQOSLocked(ctx, q)
	}
}

// writeQOSLocked writes the tiers of the active pods; m.qos.mu is held.
// A failure is logged, as the kubelet logs it: the pod starts anyway.
func (m *Manager) writeQOSLocked(ctx context.Context, q runtime.QOSCgroups) {
	pods := make([]*v1.Pod, 0, len(m.qos.pods))
	for _, p := range m.qos.pods {
		pods = append(pods, p)
	}
	m.qos.written = time.Now()
	if err := q.UpdateQOSCgroups(ctx, containerconfig.QOSTiers(pods)); err != nil {
		klog.FromContext(ctx).V(2).Info("Failed to update the QoS cgroups", "err", err)
	}
}
