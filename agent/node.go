package agent

import (
	"context"
	"runtime"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	kiteversion "github.com/kite-project/kite/version"
)

// The Ready condition the agent reports while it has no container
// runtime: the node exists (mirror pods need it, their ownerReference
// names its UID) but must not look able to run pods.
const (
	notReadyReason  = "NoContainerRuntime"
	notReadyMessage = "kite's agent does not run containers yet"
	// maxPods is the kubelet's default --max-pods.
	maxPods = 110
)

// registerNode creates the Node, or refreshes the status of the one a
// previous run created, as the kubelet registers its node at start.
func registerNode(ctx context.Context, cs kubernetes.Interface, name string) error {
	nodes := cs.CoreV1().Nodes()
	now := metav1.Now()
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1.LabelHostname:   name,
			v1.LabelOSStable:   runtime.GOOS,
			v1.LabelArchStable: runtime.GOARCH,
		}},
		Status: nodeStatus(name, now, nil),
	}
	_, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		old, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		old.Status = nodeStatus(name, now, old.Status.Conditions)
		_, err = nodes.UpdateStatus(ctx, old, metav1.UpdateOptions{})
		return err
	})
}

// nodeStatus is what the agent knows of its node. The Ready condition keeps
// its transition time from old when its status does not change.
func nodeStatus(name string, now metav1.Time, old []v1.NodeCondition) v1.NodeStatus {
	ready := v1.NodeCondition{
		Type:               v1.NodeReady,
		Status:             v1.ConditionFalse,
		Reason:             notReadyReason,
		Message:            notReadyMessage,
		LastHeartbeatTime:  now,
		LastTransitionTime: now,
	}
	for _, c := range old {
		if c.Type == v1.NodeReady && c.Status == ready.Status {
			ready.LastTransitionTime = c.LastTransitionTime
		}
	}
	// Capacity as the kubelet reports it (allocatable = capacity, with no
	// reservations configured): without it kubectl describe node divides
	// by zero, and schedulers see a node that fits nothing.
	capacity := v1.ResourceList{
		v1.ResourceCPU:  *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		v1.ResourcePods: *resource.NewQuantity(maxPods, resource.DecimalSI),
	}
	if mem := hostMemory(); mem > 0 {
		capacity[v1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	return v1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity.DeepCopy(),
		Conditions:  []v1.NodeCondition{ready},
		Addresses:   []v1.NodeAddress{{Type: v1.NodeHostName, Address: name}},
		NodeInfo: v1.NodeSystemInfo{
			KubeletVersion:  kiteversion.GitVersion,
			OperatingSystem: runtime.GOOS,
			Architecture:    runtime.GOARCH,
		},
	}
}

// keepRegistering registers the Node, retrying with backoff until it
// succeeds or ctx ends: an agent may start before its API server.
func keepRegistering(ctx context.Context, cs kubernetes.Interface, name string) {
	log := klog.FromContext(ctx)
	wait := 500 * time.Millisecond
	for {
		err := registerNode(ctx, cs, name)
		if err == nil {
			log.Info("Registered node", "node", name)
			return
		}
		if ctx.Err() != nil {
			return
		}
		log.Error(err, "Cannot register node, retrying", "node", name, "after", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 10*time.Second)
	}
}
