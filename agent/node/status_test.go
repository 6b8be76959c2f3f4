package node

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

func condition(s v1.NodeStatus, t v1.NodeConditionType) v1.NodeCondition {
	for _, c := range s.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.NodeCondition{}
}

func TestBuildReadyConditionAndItsTransitionTime(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(10 * time.Second))
	ready := Build(Info{MaxPods: 110}, nil, t0)
	notReady := Build(Info{MaxPods: 110, NotReady: []string{"container runtime is down"}}, &ready, t1)
	tests := []struct {
		name                  string
		info                  Info
		old                   *v1.NodeStatus
		status                v1.ConditionStatus
		reason, message       string
		transition, heartbeat metav1.Time
	}{
		{"new and healthy", Info{MaxPods: 110}, nil, v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status", t0, t0},
		{"still ready keeps its transition", Info{MaxPods: 110}, &ready, v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status", t0, t1},
		{"flip to not ready moves it", Info{NotReady: []string{"container runtime is down"}}, &ready, v1.ConditionFalse, "KubeletNotReady", "container runtime is down", t1, t1},
		{"several reasons as a list", Info{NotReady: []string{"a", "b"}}, &notReady, v1.ConditionFalse, "KubeletNotReady", "[a, b]", t1, t1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := condition(Build(tt.info, tt.old, t1), v1.NodeReady)
			if tt.old == nil {
				got = condition(Build(tt.info, nil, t0), v1.NodeReady)
			}
			if got.Status != tt.status || got.Reason != tt.reason || got.Message != tt.message {
				t.Errorf("Ready = %s/%s/%q, want %s/%s/%q", got.Status, got.Reason, got.Message, tt.status, tt.reason, tt.message)
			}
			if !got.LastTransitionTime.Equal(&tt.transition) || !got.LastHeartbeatTime.Equal(&tt.heartbeat) {
				t.Errorf("times: transition %v heartbeat %v, want %v %v", got.LastTransitionTime, got.LastHeartbeatTime, tt.transition, tt.heartbeat)
			}
		})
	}
}

func TestBuildPressureConditionsInTheKubeletsOrder(t *testing.T) {
	s := Build(Info{MaxPods: 110, MemoryPressure: ptr.To(true), DiskPressure: ptr.To(false)}, nil, metav1.Now())
	want := []struct {
		typ    v1.NodeConditionType
		status v1.ConditionStatus
		reason string
	}{
		{v1.NodeMemoryPressure, v1.ConditionTrue, "KubeletHasInsufficientMemory"},
		{v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure"},
		{v1.NodePIDPressure, v1.ConditionUnknown, "NodeStatusUnknown"},
		{v1.NodeReady, v1.ConditionTrue, "KubeletReady"},
	}
	if len(s.Conditions) != len(want) {
		t.Fatalf("conditions %v, want %d", s.Conditions, len(want))
	}
	for i, w := range want {
		c := s.Conditions[i]
		if c.Type != w.typ || c.Status != w.status || c.Reason != w.reason {
			t.Errorf("condition %d = %s %s %s, want %s %s %s", i, c.Type, c.Status, c.Reason, w.typ, w.status, w.reason)
		}
	}
}

func TestBuildCapacityAndAllocatable(t *testing.T) {
	s := Build(Info{CPUs: 2, MemoryBytes: 1 << 30, EphemeralStorageBytes: 10 << 30, MaxPods: 110, Port: 10250}, nil, metav1.Now())
	checks := []struct {
		list v1.ResourceList
		name v1.ResourceName
		want string
	}{
		{s.Capacity, v1.ResourceCPU, "2"},
		{s.Capacity, v1.ResourceMemory, "1Gi"},
		{s.Capacity, v1.ResourcePods, "110"},
		{s.Capacity, v1.ResourceEphemeralStorage, "10Gi"},
		{s.Allocatable, v1.ResourceMemory, "924Mi"}, // less the 100Mi hard eviction threshold
		{s.Allocatable, v1.ResourcePods, "110"},
	}
	for _, c := range checks {
		q := c.list[c.name]
		if want := resource.MustParse(c.want); q.Cmp(want) != 0 {
			t.Errorf("%s = %s, want %s", c.name, q.String(), c.want)
		}
	}
	if s.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("daemon port %d", s.DaemonEndpoints.KubeletEndpoint.Port)
	}
}

func TestChangedIgnoresHeartbeatsOnly(t *testing.T) {
	t0 := metav1.Now()
	a := Build(Info{MaxPods: 110}, nil, t0)
	later := Build(Info{MaxPods: 110}, &a, metav1.NewTime(t0.Add(time.Minute)))
	if Changed(&a, &later) {
		t.Error("a status that differs only in heartbeats counts as changed")
	}
	down := Build(Info{MaxPods: 110, NotReady: []string{"container runtime is down"}}, &a, t0)
	if !Changed(&a, &down) {
		t.Error("a Ready flip does not count as changed")
	}
	more := Build(Info{MaxPods: 111}, &a, t0)
	if !Changed(&a, &more) {
		t.Error("a capacity change does not count as changed")
	}
	if !Changed(nil, &a) {
		t.Error("no previous status does not count as changed")
	}
}

func TestBuildKeepsOthersConditionsAndDropsGoneDegradedOnes(t *testing.T) {
	now := metav1.Now()
	old := Build(Info{MaxPods: 1, Degraded: []v1.NodeCondition{{Type: "ResourceLimits", Reason: "NoWritableCgroup"}}}, nil, now)
	old.Conditions = append(old.Conditions, v1.NodeCondition{Type: "KernelDeadlock", Status: v1.ConditionFalse, Reason: "KernelHasNoDeadlock"})
	if c := condition(old, "ResourceLimits"); c.Status != v1.ConditionFalse || c.Reason != "NoWritableCgroup" {
		t.Fatalf("degraded condition %+v", c)
	}
	next := Build(Info{MaxPods: 1}, &old, now)
	if c := condition(next, "ResourceLimits"); c.Type != "" {
		t.Errorf("a degraded condition no longer reported stays: %+v", c)
	}
	if c := condition(next, "KernelDeadlock"); c.Reason != "KernelHasNoDeadlock" {
		t.Errorf("another writer's condition is dropped: %v", next.Conditions)
	}
}

func TestNodeImagesLargestFirstWithDigestsThenTags(t *testing.T) {
	imgs := []*runtimeapi.Image{
		{Id: "sha256:a", RepoTags: []string{"small:1"}, Size: 10},
		{Id: "sha256:b", RepoTags: []string{"big:1", "big:latest"}, RepoDigests: []string{"big@sha256:b"}, Size: 100},
		{Id: "sha256:c", Size: 1000}, // no name
	}
	got := NodeImages(imgs)
	want := []v1.ContainerImage{{Names: []string{"big@sha256:b", "big:1", "big:latest"}, SizeBytes: 100}, {Names: []string{"small:1"}, SizeBytes: 10}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("NodeImages = %+v, want %+v", got, want)
	}
}
