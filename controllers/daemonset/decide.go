package daemonset

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/controller"
	"github.com/kite-project/kite/controllers/scheduler"
)

// DaemonTolerations are the tolerations upstream adds to every daemon
// pod (AddOrUpdateDaemonPodTolerations): it stays on not-ready and
// unreachable nodes and ignores pressure and cordons; host-network pods
// also ignore an unavailable network.
func DaemonTolerations(spec *corev1.PodSpec) []corev1.Toleration {
	add := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if spec.HostNetwork {
		add = append(add, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	out := slices.Clone(spec.Tolerations)
	for _, t := range add {
		i := slices.IndexFunc(out, func(o corev1.Toleration) bool { return o.Key == t.Key && o.Effect == t.Effect })
		if i >= 0 {
			out[i] = t
		} else {
			out = append(out, t)
		}
	}
	return out
}

// PinToNode is upstream's ReplaceDaemonSetPodNodeNameNodeAffinity: the
// required node affinity becomes metadata.name In [node], so the
// scheduler places the pod on that node and nowhere else.
func PinToNode(spec *corev1.PodSpec, node string) {
	term := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
		{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}
}

// TargetNode is the node a daemon pod is for: spec.nodeName once bound,
// else the node its affinity pins it to ("" if none).
func TargetNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// ShouldRun is upstream's NodeShouldRunDaemonPod: whether the node should
// get a daemon pod (the template's nodeSelector and required affinity
// match it, and its NoSchedule and NoExecute taints are tolerated, with
// the daemon tolerations) and whether a pod already there may stay (only
// NoExecute taints count).
func ShouldRun(ds *appsv1.DaemonSet, node *corev1.Node) (run, stay bool) {
	spec := ds.Spec.Template.Spec.DeepCopy()
	spec.Tolerations = DaemonTolerations(spec)
	pod := &corev1.Pod{Spec: *spec}
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return false, false
	}
	if !scheduler.MatchesNodeAffinity(pod, node) {
		return false, false
	}
	run, stay = true, true
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule || tolerated(spec.Tolerations, t) {
			continue
		}
		run = false
		if t.Effect == corev1.TaintEffectNoExecute {
			stay = false
		}
	}
	return run, stay
}

func tolerated(tols []corev1.Toleration, t *corev1.Taint) bool {
	for i := range tols {
		if tols[i].ToleratesTaint(klog.Background(), t, true) {
			return true
		}
	}
	return false
}

// Input is what Decide looks at: the DaemonSet, every node, the pods the
// set owns (not terminating), those of its pods being deleted that have
// not finished, the current revision's hash and the clock.
type Input struct {
	DaemonSet *appsv1.DaemonSet
	Nodes     []*corev1.Node
	Pods      []*corev1.Pod
	// Terminating pods still run: as upstream's manage, a node holding
	// one gets its new pod once it is gone (a DaemonSet's pods often hold
	// host ports), unless the set surges, and the rolling update counts
	// the node unavailable meanwhile.
	Terminating []*corev1.Pod
	Hash        string
	Now         time.Time
}

// Plan is Decide's answer: the nodes to make a pod for, the pods to
// delete, and the status.
type Plan struct {
	Create []string
	Delete []*corev1.Pod
	Status appsv1.DaemonSetStatus
}

func isUpdated(p *corev1.Pod, hash string) bool {
	return p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash
}

// Decide is upstream's manage and rollingUpdate for one DaemonSet. Each
// node that should run the pod gets one (failed ones are deleted, to be
// made again; extra ones beyond the oldest are deleted); pods on nodes
// that should not keep them, or pinned to nodes that are gone, are
// deleted. A RollingUpdate then replaces pods of an old revision: with
// maxSurge 0, deleting old pods while fewer than maxUnavailable of the
// desired nodes are unavailable (unavailable old pods always go); with a
// surge, making the new pod beside an available old one (up to maxSurge
// at once) and deleting the old one once the new one is available.
func Decide(in Input) Plan {
	ds := in.DaemonSet
	byNode := map[string][]*corev1.Pod{}
	for _, p := range in.Pods {
		byNode[TargetNode(p)] = append(byNode[TargetNode(p)], p)
	}
	terminating := map[string]bool{}
	for _, p := range in.Terminating {
		terminating[TargetNode(p)] = true
	}
	var plan Plan
	known := map[string]bool{}
	var desired []*corev1.Node
	st := &plan.Status
	for _, node := range in.Nodes {
		known[node.Name] = true
		run, stay := ShouldRun(ds, node)
		pods := byNode[node.Name]
		if run {
			st.DesiredNumberScheduled++
			desired = append(desired, node)
		}
		if len(pods) > 0 {
			if run {
				st.CurrentNumberScheduled++
			} else {
				st.NumberMisscheduled++
			}
		}
		switch {
		case run && len(pods) == 0:
			if !terminating[node.Name] || allowsSurge(ds) {
				plan.Create = append(plan.Create, node.Name)
			}
		case stay:
			var live []*corev1.Pod
			for _, p := range pods {
				if p.Status.Phase == corev1.PodFailed {
					plan.Delete = append(plan.Delete, p)
				} else {
					live = append(live, p)
				}
			}
			if len(live) == 0 && run {
				plan.Create = append(plan.Create, node.Name)
			}
			if len(live) > 1 && !surging(ds, live, in.Hash) {
				slices.SortFunc(live, func(a, b *corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
				plan.Delete = append(plan.Delete, live[1:]...)
			}
		default:
			plan.Delete = append(plan.Delete, pods...)
		}
	}
	for name, pods := range byNode {
		if !known[name] {
			for _, p := range pods {
				if p.Spec.NodeName == "" { // bound ones are pod GC's
					plan.Delete = append(plan.Delete, p)
				}
			}
		}
	}
	for _, node := range desired {
		for _, p := range byNode[node.Name] {
			if controller.Ready(p) {
				st.NumberReady++
				if controller.Available(p, ds.Spec.MinReadySeconds, in.Now) {
					st.NumberAvailable++
				}
			}
			if isUpdated(p, in.Hash) {
				st.UpdatedNumberScheduled++
			}
		}
	}
	st.NumberUnavailable = max(st.DesiredNumberScheduled-st.NumberAvailable, 0)
	st.ObservedGeneration = ds.Generation
	if ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType && len(plan.Create) == 0 && len(plan.Delete) == 0 {
		rollingUpdate(in, desired, byNode, terminating, &plan)
	}
	return plan
}

// allowsSurge is upstream's AllowsSurge: a rolling update whose maxSurge
// is not zero.
func allowsSurge(ds *appsv1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.MaxSurge == nil || ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return false
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, 1, true)
	return err == nil && v != 0
}

// surging says a node holds an old and a new pod on purpose.
func surging(ds *appsv1.DaemonSet, live []*corev1.Pod, hash string) bool {
	return allowsSurge(ds) && len(live) == 2 && isUpdated(live[0], hash) != isUpdated(live[1], hash)
}

func rollingUpdate(in Input, desired []*corev1.Node, byNode map[string][]*corev1.Pod, terminating map[string]bool, plan *Plan) {
	ds := in.DaemonSet
	n := len(desired)
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	maxUnavailable, maxSurge := 0, 0
	if ru != nil && ru.MaxUnavailable != nil {
		maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, n, true)
	}
	if ru != nil && ru.MaxSurge != nil {
		maxSurge, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, n, true)
	}
	if maxUnavailable == 0 && maxSurge == 0 {
		maxUnavailable = 1
	}
	avail := func(p *corev1.Pod) bool { return controller.Available(p, ds.Spec.MinReadySeconds, in.Now) }
	if maxSurge == 0 {
		unavailable := 0
		var candidates []*corev1.Pod
		for _, node := range desired {
			pods := byNode[node.Name]
			var newPod, oldPod *corev1.Pod
			for _, p := range pods {
				if isUpdated(p, in.Hash) {
					newPod = p
				} else {
					oldPod = p
				}
			}
			switch {
			case newPod == nil && oldPod == nil && terminating[node.Name]:
				unavailable++ // its new pod comes once the old one is gone
			case newPod != nil:
				if !avail(newPod) {
					unavailable++
				}
			case oldPod != nil && !avail(oldPod):
				plan.Delete = append(plan.Delete, oldPod) // nothing to lose
				unavailable++
			case oldPod != nil:
				candidates = append(candidates, oldPod)
			}
		}
		for _, p := range candidates {
			if unavailable >= maxUnavailable {
				break
			}
			plan.Delete = append(plan.Delete, p)
			unavailable++
		}
		return
	}
	surged := 0
	var candidates []string
	for _, node := range desired {
		var newPod, oldPod *corev1.Pod
		for _, p := range byNode[node.Name] {
			if isUpdated(p, in.Hash) {
				newPod = p
			} else {
				oldPod = p
			}
		}
		switch {
		case oldPod == nil:
		case newPod == nil && !avail(oldPod):
			plan.Delete = append(plan.Delete, oldPod)
		case newPod == nil:
			candidates = append(candidates, node.Name)
		case avail(newPod):
			plan.Delete = append(plan.Delete, oldPod)
		default:
			surged++
		}
	}
	for _, name := range candidates {
		if surged >= maxSurge {
			break
		}
		plan.Create = append(plan.Create, name)
		surged++
	}
}
