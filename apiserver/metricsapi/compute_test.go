package metricsapi

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func summary(at time.Time, nodeCPU uint64, pods ...statsapi.PodStats) *statsapi.Summary {
	mem := uint64(1 << 30)
	return &statsapi.Summary{Node: statsapi.NodeStats{NodeName: "n",
		CPU:    &statsapi.CPUStats{Time: metav1.NewTime(at), UsageCoreNanoSeconds: &nodeCPU},
		Memory: &statsapi.MemoryStats{Time: metav1.NewTime(at), WorkingSetBytes: &mem}}, Pods: pods}
}

func pod(name, uid string, at time.Time, containers map[string]uint64) statsapi.PodStats {
	p := statsapi.PodStats{PodRef: statsapi.PodReference{Name: name, Namespace: "ns", UID: uid}}
	for c, cpu := range containers {
		cpu, mem := cpu, uint64(4<<20)
		p.Containers = append(p.Containers, statsapi.ContainerStats{Name: c,
			CPU:    &statsapi.CPUStats{Time: metav1.NewTime(at), UsageCoreNanoSeconds: &cpu},
			Memory: &statsapi.MemoryStats{Time: metav1.NewTime(at), WorkingSetBytes: &mem}})
	}
	return p
}

func TestComputeRatesNeedTwoReadings(t *testing.T) {
	t0 := time.Unix(1000, 0)
	t1 := t0.Add(2 * time.Second)
	first, snap := compute(points{}, []*statsapi.Summary{summary(t0, 10e9, pod("web", "u1", t0, map[string]uint64{"app": 1e9}))})
	if len(snap.nodes) != 0 || len(snap.pods) != 0 {
		t.Fatalf("metrics after one reading: %+v", snap)
	}
	for _, tc := range []struct {
		name        string
		sum         *statsapi.Summary
		wantNodeCPU string
		wantPodCPU  string // "" for no pod metrics
	}{
		{"two readings give a rate", summary(t1, 12e9, pod("web", "u1", t1, map[string]uint64{"app": 1.5e9})), "1", "250m"},
		{"a restarted container waits for its next reading", summary(t1, 12e9, pod("web", "u1", t1, map[string]uint64{"app": 0.1e9})), "1", ""},
		{"a recreated pod (new UID) starts over", summary(t1, 12e9, pod("web", "u2", t1, map[string]uint64{"app": 1.5e9})), "1", ""},
		{"a pod with a container never read before waits", summary(t1, 12e9, pod("web", "u1", t1, map[string]uint64{"app": 1.5e9, "sidecar": 1e9})), "1", ""},
		{"a node that did not answer has no metrics", nil, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, snap := compute(first, []*statsapi.Summary{tc.sum})
			node, ok := snap.nodes["n"]
			if tc.wantNodeCPU == "" {
				if ok {
					t.Errorf("node metrics %+v, want none", node)
				}
			} else if got := node.Usage[corev1.ResourceCPU]; got.String() != tc.wantNodeCPU || node.Window.Duration != 2*time.Second {
				t.Errorf("node CPU %s over %s, want %s over 2s", got.String(), node.Window.Duration, tc.wantNodeCPU)
			}
			pm, ok := snap.pods["ns"]["web"]
			if tc.wantPodCPU == "" {
				if ok {
					t.Errorf("pod metrics %+v, want none", pm)
				}
				return
			}
			if !ok || len(pm.Containers) != 1 {
				t.Fatalf("pod metrics %+v", pm)
			}
			if got := pm.Containers[0].Usage[corev1.ResourceCPU]; got.String() != tc.wantPodCPU {
				t.Errorf("container CPU %s, want %s", got.String(), tc.wantPodCPU)
			}
			if got := pm.Containers[0].Usage[corev1.ResourceMemory]; got.Value() != 4<<20 {
				t.Errorf("container memory %s, want 4Mi", got.String())
			}
		})
	}
}
