package scheduler

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name string, cpu, mem string, pods int64, mod ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	n.Status.Allocatable = v1.ResourceList{
		v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem),
		v1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI), v1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
	}
	for _, m := range mod {
		m(n)
	}
	return n
}

func pod(name string, req v1.ResourceList, mod ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
	for _, m := range mod {
		m(p)
	}
	return p
}

func cpu(q string) v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)} }

func tainted(key string, effect v1.TaintEffect) func(*v1.Node) {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Effect: effect}) }
}

func labeled(k, v string) func(*v1.Node) { return func(n *v1.Node) { n.Labels[k] = v } }

func hostPort(port int32) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: port}} }
}

func TestSchedule(t *testing.T) {
	never := v1.PreemptNever
	cases := []struct {
		name    string
		pod     *v1.Pod
		nodes   []*NodeInfo
		want    string // the node, or "" when it fits nowhere
		message string // the FitError's text when it fits nowhere
	}{
		{
			name: "least allocated node wins",
			pod:  pod("p", cpu("1")),
			nodes: []*NodeInfo{
				{Node: node("busy", "4", "8Gi", 110), Pods: []*v1.Pod{pod("a", cpu("3"))}},
				{Node: node("free", "4", "8Gi", 110)},
			},
			want: "free",
		},
		{
			name:    "no nodes",
			pod:     pod("p", nil),
			message: "no nodes available to schedule pods",
		},
		{
			name: "insufficient cpu and untolerated taints, upstream's message",
			pod:  pod("p", cpu("2")),
			nodes: []*NodeInfo{
				{Node: node("small", "1", "8Gi", 110)},
				{Node: node("t1", "4", "8Gi", 110, tainted("dedicated", v1.TaintEffectNoSchedule))},
				{Node: node("t2", "4", "8Gi", 110, tainted(v1.TaintNodeUnreachable, v1.TaintEffectNoExecute))},
			},
			message: "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
		},
		{
			name: "cpu used by bound pods counts; a request beyond what is free has victims to look for",
			pod:  pod("p", cpu("2")),
			nodes: []*NodeInfo{
				{Node: node("n", "3", "8Gi", 110), Pods: []*v1.Pod{pod("a", cpu("2"))}},
			},
			message: "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
		},
		{
			name:    "insufficient memory and cpu on one node",
			pod:     pod("p", v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("16Gi")}),
			nodes:   []*NodeInfo{{Node: node("n", "1", "8Gi", 110)}},
			message: "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
		},
		{
			name:    "too many pods",
			pod:     pod("p", nil),
			nodes:   []*NodeInfo{{Node: node("n", "4", "8Gi", 1), Pods: []*v1.Pod{pod("a", nil)}}},
			message: "0/1 nodes are available: 1 Too many pods. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
		},
		{
			name:    "ephemeral storage",
			pod:     pod("p", v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("20Gi")}),
			nodes:   []*NodeInfo{{Node: node("n", "4", "8Gi", 110)}},
			message: "0/1 nodes are available: 1 Insufficient ephemeral-storage. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
		},
		{
			name: "tolerated taint and PreferNoSchedule do not filter",
			pod: pod("p", nil, func(p *v1.Pod) {
				p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
			}),
			nodes: []*NodeInfo{
				{Node: node("a", "4", "8Gi", 110, tainted("dedicated", v1.TaintEffectNoSchedule))},
				{Node: node("b", "4", "8Gi", 110, tainted("soft", v1.TaintEffectPreferNoSchedule)), Pods: []*v1.Pod{pod("x", cpu("3"))}},
			},
			want: "a",
		},
		{
			name:    "unschedulable node",
			pod:     pod("p", nil),
			nodes:   []*NodeInfo{{Node: node("a", "4", "8Gi", 110, func(n *v1.Node) { n.Spec.Unschedulable = true })}},
			message: "0/1 nodes are available: 1 node(s) were unschedulable. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
		},
		{
			name: "unschedulable node tolerated",
			pod: pod("p", nil, func(p *v1.Pod) {
				p.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
			}),
			nodes: []*NodeInfo{{Node: node("a", "4", "8Gi", 110, func(n *v1.Node) { n.Spec.Unschedulable = true })}},
			want:  "a",
		},
		{
			name: "nodeSelector",
			pod:  pod("p", nil, func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }),
			nodes: []*NodeInfo{
				{Node: node("hdd", "4", "8Gi", 110, labeled("disk", "hdd"))},
				{Node: node("ssd", "4", "8Gi", 110, labeled("disk", "ssd")), Pods: []*v1.Pod{pod("x", cpu("3"))}},
			},
			want: "ssd",
		},
		{
			name: "required node affinity: terms ORed, expressions ANDed, Gt",
			pod: pod("p", nil, func(p *v1.Pod) {
				p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{
						{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a"}}, {Key: "gen", Operator: v1.NodeSelectorOpGt, Values: []string{"3"}}}},
						{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"named"}}}},
					},
				}}}
			}),
			nodes: []*NodeInfo{
				{Node: node("old", "4", "8Gi", 110, labeled("zone", "a"), labeled("gen", "2"))},
				{Node: node("named", "4", "8Gi", 110), Pods: []*v1.Pod{pod("x", cpu("3"))}},
			},
			want: "named",
		},
		{
			name: "affinity matches nothing",
			pod: pod("p", nil, func(p *v1.Pod) {
				p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
					NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpDoesNotExist}}}},
				}}}
			}),
			nodes:   []*NodeInfo{{Node: node("a", "4", "8Gi", 110, labeled("zone", "a"))}, {Node: node("b", "4", "8Gi", 110, labeled("zone", "b"))}},
			message: "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
		},
		{
			name: "host port in use",
			pod:  pod("p", nil, hostPort(8080)),
			nodes: []*NodeInfo{
				{Node: node("a", "4", "8Gi", 110), Pods: []*v1.Pod{pod("x", nil, hostPort(8080))}},
				{Node: node("b", "4", "8Gi", 110), Pods: []*v1.Pod{pod("y", cpu("3"), hostPort(9090))}},
			},
			want: "b",
		},
		{
			name:    "preemptionPolicy Never",
			pod:     pod("p", cpu("8"), func(p *v1.Pod) { p.Spec.PreemptionPolicy = &never }),
			nodes:   []*NodeInfo{{Node: node("a", "4", "8Gi", 110)}},
			message: "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.",
		},
		{
			name: "init containers count at their largest, sidecars all along",
			pod: pod("p", cpu("1"), func(p *v1.Pod) {
				always := v1.ContainerRestartPolicyAlways
				p.Spec.InitContainers = []v1.Container{
					{Name: "side", RestartPolicy: &always, Resources: v1.ResourceRequirements{Requests: cpu("1")}},
					{Name: "init", Resources: v1.ResourceRequirements{Requests: cpu("2500m")}},
				}
			}),
			// 1 + 1 = 2 while running, 1 + 2.5 = 3.5 while the init runs.
			nodes:   []*NodeInfo{{Node: node("a", "3", "8Gi", 110)}},
			message: "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Schedule(c.pod, c.nodes, nil)
			var fe *FitError
			switch {
			case c.want != "" && err != nil:
				t.Fatalf("Schedule: %v, want node %s", err, c.want)
			case c.want != "" && got != c.want:
				t.Fatalf("Schedule = %s, want %s", got, c.want)
			case c.want == "" && !errors.As(err, &fe):
				t.Fatalf("Schedule = %q, %v; want a FitError", got, err)
			case c.want == "" && err.Error() != c.message:
				t.Fatalf("message\n got %s\nwant %s", err.Error(), c.message)
			}
		})
	}
}

// Equal scores are spread by pick, as upstream's random choice.
func TestScheduleSpreadsTies(t *testing.T) {
	nodes := []*NodeInfo{{Node: node("a", "4", "8Gi", 110)}, {Node: node("b", "4", "8Gi", 110)}, {Node: node("c", "4", "8Gi", 110)}}
	got := map[string]bool{}
	for i := range 3 {
		// pick(n) == 0 takes the n-th tie: choose tie i+1 (tie 1 is the first).
		n, err := Schedule(pod("p", nil), nodes, func(n int) int {
			if n == i+1 {
				return 0
			}
			return 1
		})
		if err != nil {
			t.Fatal(err)
		}
		got[n] = true
	}
	if len(got) != 3 {
		t.Fatalf("ties went to %v, want all three nodes", got)
	}
}

// Scoring counts a container's missing request at 100m cpu and 200 MiB,
// each on its own: a pod asking for memory only still weighs 100m cpu.
func TestScoreCountsMissingRequestsPerContainer(t *testing.T) {
	memOnly := pod("m", v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")})
	n := node("n", "1", "4Gi", 110)
	// The incoming pod requests nothing: 100m + 200 MiB. With memOnly:
	// cpu 200m of 1000m (80 free), memory 1 GiB + 200 MiB of 4 GiB (70 free).
	if got := leastAllocated(pod("p", nil), n, NewUsage([]*v1.Pod{memOnly})); got != (80+70)/2 {
		t.Fatalf("score = %d, want %d", got, (80+70)/2)
	}
}
