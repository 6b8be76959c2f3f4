package daemonset

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/apis/apps/defaults"
)

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func daemonSet(mutate ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", Generation: 2}}
	defaults.DaemonSet(ds)
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

func node(name string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": "linux"}}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func taint(key string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

func pod(name, nodeName, hash string, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "u-" + "name", Labels: map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hash},
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
	PinToNode(&p.Spec, nodeName)
	if ready {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	}
	return p
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestShouldRun(t *testing.T) {
	tests := []struct {
		name      string
		ds        *appsv1.DaemonSet
		node      *corev1.Node
		run, stay bool
	}{
		{"plain node", daemonSet(), node("n"), true, true},
		{"nodeSelector matches", daemonSet(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
		}), node("n"), true, true},
		{"nodeSelector does not match", daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"gpu": "yes"} }), node("n"), false, false},
		{"required affinity does not match", daemonSet(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}
		}), node("n"), false, false},
		{"cordoned: tolerated automatically", daemonSet(), node("n", taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)), true, true},
		{"not ready: tolerated automatically", daemonSet(), node("n", taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)), true, true},
		{"network unavailable: only host network pods", daemonSet(), node("n", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), false, true},
		{"network unavailable with host network", daemonSet(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = true }),
			node("n", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), true, true},
		{"NoSchedule taint: no new pod, the old one stays", daemonSet(), node("n", taint("dedicated", corev1.TaintEffectNoSchedule)), false, true},
		{"NoExecute taint: the pod goes", daemonSet(), node("n", taint("dedicated", corev1.TaintEffectNoExecute)), false, false},
		{"tolerated taint", daemonSet(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}), node("n", taint("dedicated", corev1.TaintEffectNoExecute)), true, true},
		{"PreferNoSchedule does not count", daemonSet(), node("n", taint("x", corev1.TaintEffectPreferNoSchedule)), true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run, stay := ShouldRun(tc.ds, tc.node)
			if run != tc.run || stay != tc.stay {
				t.Errorf("run, stay = %v, %v; want %v, %v", run, stay, tc.run, tc.stay)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	surge := func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))}
	}
	tests := []struct {
		name       string
		ds         *appsv1.DaemonSet
		nodes      []*corev1.Node
		pods       []*corev1.Pod
		wantCreate []string
		wantDelete []string
		// terminating are pods being deleted, still running.
		terminating []*corev1.Pod
	}{
		{"one pod per node", daemonSet(), []*corev1.Node{node("a"), node("b")}, []*corev1.Pod{pod("p-a", "a", "h2", true)}, []string{"b"}, nil, nil},
		{"a pod on a node that should not run it goes", daemonSet(), []*corev1.Node{node("a", taint("x", corev1.TaintEffectNoExecute))},
			[]*corev1.Pod{pod("p-a", "a", "h2", true)}, nil, []string{"p-a"}, nil},
		{"a failed pod is replaced", daemonSet(), []*corev1.Node{node("a")}, []*corev1.Pod{func() *corev1.Pod {
			p := pod("p-a", "a", "h2", false)
			p.Status.Phase = corev1.PodFailed
			return p
		}()}, []string{"a"}, []string{"p-a"}, nil},
		{"extra pods beyond the oldest go", daemonSet(), []*corev1.Node{node("a")}, []*corev1.Pod{pod("old", "a", "h2", true), func() *corev1.Pod {
			p := pod("new", "a", "h2", true)
			p.CreationTimestamp = metav1.NewTime(now)
			return p
		}()}, nil, []string{"new"}, nil},
		{"an unbound pod for a node gone goes", daemonSet(), []*corev1.Node{node("a")}, []*corev1.Pod{pod("p-a", "a", "h2", true), pod("p-gone", "gone", "h2", false)},
			nil, []string{"p-gone"}, nil},
		{"rolling update: maxUnavailable 1", daemonSet(), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "h1", true), pod("p-b", "b", "h1", true)}, nil, []string{"p-a"}, nil},
		{"rolling update waits for the new pod", daemonSet(), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "h2", false), pod("p-b", "b", "h1", true)}, nil, nil, nil},
		{"rolling update: unavailable old pods go at once", daemonSet(), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "h1", false), pod("p-b", "b", "h1", false)}, nil, []string{"p-a", "p-b"}, nil},
		{"OnDelete leaves old pods", daemonSet(func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		}), []*corev1.Node{node("a")}, []*corev1.Pod{pod("p-a", "a", "h1", true)}, nil, nil, nil},
		{"surge: the new pod beside the old", daemonSet(surge), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "h1", true), pod("p-b", "b", "h1", true)}, []string{"a"}, nil, nil},
		{"surge: the old pod goes once the new one is available, the next node surges", daemonSet(surge), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "h1", true), pod("n-a", "a", "h2", true), pod("p-b", "b", "h1", true)}, []string{"b"}, []string{"p-a"}, nil},
		{"surge: one at a time", daemonSet(surge), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-a", "a", "h1", true), pod("n-a", "a", "h2", false), pod("p-b", "b", "h1", true)}, nil, nil, nil},
		{"no new pod beside a terminating one: it comes once the old one is gone", daemonSet(), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-b", "b", "h2", true)}, nil, nil, []*corev1.Pod{pod("p-a", "a", "h1", true)}},
		{"rolling update: a node whose old pod terminates counts unavailable", daemonSet(), []*corev1.Node{node("a"), node("b")},
			[]*corev1.Pod{pod("p-b", "b", "h1", true)}, nil, nil, []*corev1.Pod{pod("p-a", "a", "h1", true)}},
		{"surge: the new pod beside a terminating one", daemonSet(surge), []*corev1.Node{node("a")},
			nil, []string{"a"}, nil, []*corev1.Pod{pod("p-a", "a", "h1", true)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := Decide(Input{DaemonSet: tc.ds, Nodes: tc.nodes, Pods: tc.pods, Terminating: tc.terminating, Hash: "h2", Now: now})
			slices.Sort(plan.Create)
			got := names(plan.Delete)
			slices.Sort(got)
			if diff := cmp.Diff(tc.wantCreate, plan.Create); diff != "" {
				t.Errorf("create (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDelete, got); diff != "" {
				t.Errorf("delete (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecideStatus(t *testing.T) {
	nodes := []*corev1.Node{node("a"), node("b"), node("c", taint("x", corev1.TaintEffectNoSchedule))}
	pods := []*corev1.Pod{pod("p-a", "a", "h2", true), pod("p-b", "b", "h1", false), pod("p-c", "c", "h2", true)}
	got := Decide(Input{DaemonSet: daemonSet(func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	}), Nodes: nodes, Pods: pods, Hash: "h2", Now: now}).Status
	want := appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, CurrentNumberScheduled: 2, NumberMisscheduled: 1, NumberReady: 1,
		UpdatedNumberScheduled: 1, NumberAvailable: 1, NumberUnavailable: 1, ObservedGeneration: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestNewPodIsPinnedAndTolerant(t *testing.T) {
	ds := daemonSet(func(ds *appsv1.DaemonSet) {
		ds.UID = "uid"
		ds.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: "3"}
		ds.Spec.Template.Labels = map[string]string{"app": "agent"}
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}}
	})
	p := NewPod(ds, "n1", "h")
	if TargetNode(p) != "n1" || p.Spec.NodeName != "" || p.GenerateName != "agent-" {
		t.Errorf("target %q nodeName %q generateName %q", TargetNode(p), p.Spec.NodeName, p.GenerateName)
	}
	if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != "h" || p.Labels["pod-template-generation"] != "3" || p.Labels["app"] != "agent" {
		t.Errorf("labels %v", p.Labels)
	}
	if len(p.Spec.Tolerations) != 6 || p.Spec.Tolerations[0].TolerationSeconds != nil {
		t.Errorf("tolerations %+v: want the six daemon ones, not-ready replaced without seconds", p.Spec.Tolerations)
	}
}
