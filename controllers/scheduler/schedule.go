package scheduler

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/klog/v2"
)

// Filter reasons, in upstream's words (pkg/scheduler/framework/plugins).
const (
	ReasonNodeName      = "node(s) didn't match the requested node name"
	ReasonUnschedulable = "node(s) were unschedulable"
	ReasonTaint         = "node(s) had untolerated taint(s)"
	ReasonAffinity      = "node(s) didn't match Pod's node affinity/selector"
	ReasonPorts         = "node(s) didn't have free ports for the requested pod ports"
	ReasonTooManyPods   = "Too many pods"
	// NoNodes is the message when the cluster has no node at all.
	NoNodes = "no nodes available to schedule pods"
)

// Preemption's words for a node (pkg/scheduler/framework/preemption):
// Kite does not preempt, so every node gets one of these.
const (
	preemptionNotHelpful = "Preemption is not helpful for scheduling"
	preemptionNoVictims  = "No preemption victims found for incoming pod"
)

// Upstream's non-zero defaults for scoring containers that request nothing
// (pkg/scheduler/util: DefaultMilliCPURequest, DefaultMemoryRequest).
const (
	defaultMilliCPU = 100
	defaultMemory   = 200 << 20
)

// NodeInfo is a node and the pods bound (or being bound) to it that are
// not terminal: either the pods themselves or, precomputed, their Usage
// (which wins when set).
type NodeInfo struct {
	Node  *v1.Node
	Pods  []*v1.Pod
	Usage *Usage
}

// FitError says why a pod fits no node: per node, the reasons of the
// first filter that refused it.
type FitError struct {
	Pod      *v1.Pod
	NumNodes int
	// Reasons maps node name to reasons.
	Reasons map[string][]string
	// PreFilterMsg, when set, refused the pod before any node was
	// looked at (VolumeBinding's PreFilter).
	PreFilterMsg string
	// unresolvable are the nodes refused by a filter whose reason no
	// preemption can resolve.
	unresolvable map[string]bool
}

// Error is upstream's FitError.Error with the PostFilter text of the
// default plugins (DynamicResources, then DefaultPreemption).
func (e *FitError) Error() string {
	if e.NumNodes == 0 {
		return NoNodes
	}
	counts := map[string]int{}
	for _, rs := range e.Reasons {
		for _, r := range rs {
			counts[r]++
		}
	}
	msg := fmt.Sprintf("0/%d nodes are available: %s.", e.NumNodes, histogram(counts))
	if e.PreFilterMsg != "" {
		msg = fmt.Sprintf("0/%d nodes are available: %s.", e.NumNodes, e.PreFilterMsg)
	}
	msg += " no new claims to deallocate, preemption: "
	if e.Pod.Spec.PreemptionPolicy != nil && *e.Pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return msg + "not eligible due to preemptionPolicy=Never."
	}
	post := map[string]int{}
	for node := range e.Reasons {
		if e.unresolvable[node] {
			post[preemptionNotHelpful]++
		} else {
			post[preemptionNoVictims]++
		}
	}
	return msg + fmt.Sprintf("0/%d nodes are available: %s.", e.NumNodes, histogram(post))
}

// histogram is "<count> <reason>" per reason, sorted as strings.
func histogram(counts map[string]int) string {
	items := make([]string, 0, len(counts))
	for r, n := range counts {
		items = append(items, strconv.Itoa(n)+" "+r)
	}
	sort.Strings(items)
	return strings.Join(items, ", ")
}

// Schedule picks a node for pod among nodes, as kube-scheduler's default
// profile does with its basic filters (NodeUnschedulable, NodeName,
// TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit) and the
// LeastAllocated score. Among nodes with the best score, pick(n) chooses
// one of the n (upstream chooses at random); nil takes the first. It
// returns a *FitError when no node fits.
func Schedule(pod *v1.Pod, nodes []*NodeInfo, pick func(n int) int) (string, error) {
	node, _, err := ScheduleWithVolumes(pod, nodes, pick, nil)
	return node, err
}

// ScheduleWithVolumes is Schedule with VolumeBinding's PreFilter and
// Filter (volumebinding.go) over vs, after the other filters as upstream
// orders them; nil vs leaves volumes out. It returns the plan for the
// pod's claims that wait for their first consumer on the chosen node.
func ScheduleWithVolumes(pod *v1.Pod, nodes []*NodeInfo, pick func(n int) int, vs *Volumes) (string, *VolumePlan, error) {
	fe := &FitError{Pod: pod, NumNodes: len(nodes), Reasons: map[string][]string{}, unresolvable: map[string]bool{}}
	if len(nodes) == 0 {
		return "", nil, fe
	}
	var claims *podVolumes
	if vs != nil {
		var msg string
		if claims, msg = volumePreFilter(pod, vs); msg != "" {
			fe.PreFilterMsg = msg
			for _, ni := range nodes {
				fe.Reasons[ni.Node.Name] = []string{msg}
				fe.unresolvable[ni.Node.Name] = true
			}
			return "", nil, fe
		}
	}
	plans := map[string]*VolumePlan{}
	req := podRequests(pod)
	best, bestScore, ties := "", int64(-1), 0
	for _, ni := range nodes {
		u := ni.Usage
		if u == nil {
			u = NewUsage(ni.Pods)
		}
		reasons, unresolvable := filter(pod, req, ni.Node, u)
		if len(reasons) > 0 {
			fe.Reasons[ni.Node.Name] = reasons
			if unresolvable {
				fe.unresolvable[ni.Node.Name] = true
			}
			continue
		}
		if claims != nil {
			reasons, plan := volumeFilter(claims, ni.Node, vs)
			if len(reasons) > 0 {
				fe.Reasons[ni.Node.Name] = reasons
				fe.unresolvable[ni.Node.Name] = true
				continue
			}
			plans[ni.Node.Name] = plan
		}
		s := leastAllocated(pod, ni.Node, u)
		switch {
		case s > bestScore:
			best, bestScore, ties = ni.Node.Name, s, 1
		case s == bestScore:
			// Reservoir sampling over the ties, as upstream's selectHost.
			ties++
			if pick != nil && pick(ties) == 0 {
				best = ni.Node.Name
			}
		}
	}
	if best == "" {
		return "", nil, fe
	}
	return best, plans[best], nil
}

// filter runs the filters in upstream's order and returns the first
// refusal's reasons, and whether they are unresolvable by preemption.
func filter(pod *v1.Pod, req resources, node *v1.Node, u *Usage) ([]string, bool) {
	if node.Spec.Unschedulable && !tolerates(pod.Spec.Tolerations, &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}) {
		return []string{ReasonUnschedulable}, true
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		return []string{ReasonNodeName}, true
	}
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != v1.TaintEffectNoSchedule && t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		if !tolerates(pod.Spec.Tolerations, t) {
			return []string{ReasonTaint}, true
		}
	}
	if !matchesNodeSelector(pod, node) {
		return []string{ReasonAffinity}, true
	}
	if portsClash(pod, u) {
		return []string{ReasonPorts}, false
	}
	return fits(req, node, u)
}

func tolerates(tolerations []v1.Toleration, t *v1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(klog.Background(), t, true) {
			return true
		}
	}
	return false
}

// matchesNodeSelector is NodeAffinity's filter: every nodeSelector label
// and one of the required terms.
func matchesNodeSelector(pod *v1.Pod, node *v1.Node) bool {
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if termMatches(term, node) {
			return true
		}
	}
	return false
}

// termMatches ANDs a term's expressions; a term with none matches nothing.
func termMatches(term v1.NodeSelectorTerm, node *v1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, e := range term.MatchExpressions {
		if !requirementMatches(e, labels.Set(node.Labels)) {
			return false
		}
	}
	for _, e := range term.MatchFields {
		if e.Key != "metadata.name" || !requirementMatches(e, labels.Set{"metadata.name": node.Name}) {
			return false
		}
	}
	return true
}

func requirementMatches(e v1.NodeSelectorRequirement, set labels.Set) bool {
	var op selection.Operator
	switch e.Operator {
	case v1.NodeSelectorOpIn:
		op = selection.In
	case v1.NodeSelectorOpNotIn:
		op = selection.NotIn
	case v1.NodeSelectorOpExists:
		op = selection.Exists
	case v1.NodeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	case v1.NodeSelectorOpGt:
		op = selection.GreaterThan
	case v1.NodeSelectorOpLt:
		op = selection.LessThan
	default:
		return false
	}
	r, err := labels.NewRequirement(e.Key, op, e.Values)
	if err != nil {
		return false
	}
	return r.Matches(set)
}

// portsClash is NodePorts' filter: a wanted host port (protocol and port)
// already used on the node, where 0.0.0.0 clashes with every address.
func portsClash(pod *v1.Pod, u *Usage) bool {
	want := hostPorts(pod)
	if len(want) == 0 {
		return false
	}
	for _, ports := range u.ports {
		for _, used := range ports {
			for _, w := range want {
				if w.HostPort == used.HostPort && w.Protocol == used.Protocol &&
					(w.HostIP == used.HostIP || w.HostIP == "0.0.0.0" || used.HostIP == "0.0.0.0") {
					return true
				}
			}
		}
	}
	return false
}

func hostPorts(pod *v1.Pod) []v1.ContainerPort {
	var out []v1.ContainerPort
	add := func(cs []v1.Container) {
		for _, c := range cs {
			for _, p := range c.Ports {
				if p.HostPort <= 0 {
					continue
				}
				if p.HostIP == "" {
					p.HostIP = "0.0.0.0"
				}
				if p.Protocol == "" {
					p.Protocol = v1.ProtocolTCP
				}
				out = append(out, p)
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	return out
}

// resources is a pod's or node's cpu (milli), memory, ephemeral storage
// (bytes) and other scalar resources.
type resources struct {
	milliCPU, memory, storage int64
	scalar                    map[v1.ResourceName]int64
}

func (r *resources) add(l v1.ResourceList) {
	for name, q := range l {
		r.addOne(name, q)
	}
}

func (r *resources) addOne(name v1.ResourceName, q resource.Quantity) {
	switch name {
	case v1.ResourceCPU:
		r.milliCPU += q.MilliValue()
	case v1.ResourceMemory:
		r.memory += q.Value()
	case v1.ResourceEphemeralStorage:
		r.storage += q.Value()
	case v1.ResourcePods:
	default:
		if r.scalar == nil {
			r.scalar = map[v1.ResourceName]int64{}
		}
		r.scalar[name] += q.Value()
	}
}

func (r *resources) maxWith(o resources) {
	r.milliCPU = max(r.milliCPU, o.milliCPU)
	r.memory = max(r.memory, o.memory)
	r.storage = max(r.storage, o.storage)
	for k, v := range o.scalar {
		if r.scalar == nil {
			r.scalar = map[v1.ResourceName]int64{}
		}
		r.scalar[k] = max(r.scalar[k], v)
	}
}

// podRequests is what upstream's resource helper computes: the sum of the
// containers' (and restartable init containers') requests, at least the
// largest init container's need at its turn, plus the pod overhead; pod
// level resources, when set, win.
func podRequests(pod *v1.Pod) resources { return requests(pod, false) }

// requests is podRequests; nonZero counts a container's missing cpu or
// memory request at upstream's non-zero defaults, for scoring.
func requests(pod *v1.Pod, nonZero bool) resources {
	var sum resources
	if pod.Spec.Resources != nil && len(pod.Spec.Resources.Requests) > 0 {
		sum.add(pod.Spec.Resources.Requests)
		sum.add(pod.Spec.Overhead)
		return sum
	}
	req := func(c *v1.Container) v1.ResourceList {
		l := c.Resources.Requests
		if !nonZero {
			return l
		}
		_, hasCPU := l[v1.ResourceCPU]
		_, hasMem := l[v1.ResourceMemory]
		if hasCPU && hasMem {
			return l
		}
		out := make(v1.ResourceList, len(l)+2)
		for k, v := range l {
			out[k] = v
		}
		if !hasCPU {
			out[v1.ResourceCPU] = *resource.NewMilliQuantity(defaultMilliCPU, resource.DecimalSI)
		}
		if !hasMem {
			out[v1.ResourceMemory] = *resource.NewQuantity(defaultMemory, resource.BinarySI)
		}
		return out
	}
	for i := range pod.Spec.Containers {
		sum.add(req(&pod.Spec.Containers[i]))
	}
	var sidecars, initMax resources
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		var one resources
		one.add(req(c))
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sum.add(req(c))
			sidecars.add(req(c))
			continue
		}
		// An init container runs beside the sidecars started before it.
		one.milliCPU += sidecars.milliCPU
		one.memory += sidecars.memory
		one.storage += sidecars.storage
		initMax.maxWith(one)
	}
	sum.maxWith(initMax)
	sum.add(pod.Spec.Overhead)
	return sum
}

// fits is NodeResourcesFit's filter.
func fits(req resources, node *v1.Node, u *Usage) ([]string, bool) {
	alloc := node.Status.Allocatable
	used := u.requested
	var reasons []string
	unresolvable := false
	if int64(u.pods)+1 > alloc.Pods().Value() {
		reasons = append(reasons, ReasonTooManyPods)
	}
	check := func(name string, want, have, inUse int64) {
		if want == 0 {
			return
		}
		if want > have-inUse {
			reasons = append(reasons, "Insufficient "+name)
			if want > have {
				unresolvable = true
			}
		}
	}
	check("cpu", req.milliCPU, alloc.Cpu().MilliValue(), used.milliCPU)
	check("memory", req.memory, alloc.Memory().Value(), used.memory)
	check("ephemeral-storage", req.storage, alloc.StorageEphemeral().Value(), used.storage)
	names := make([]string, 0, len(req.scalar))
	for k := range req.scalar {
		names = append(names, string(k))
	}
	sort.Strings(names)
	for _, k := range names {
		q := alloc[v1.ResourceName(k)]
		check(k, req.scalar[v1.ResourceName(k)], q.Value(), used.scalar[v1.ResourceName(k)])
	}
	return reasons, unresolvable
}

// leastAllocated is NodeResourcesFit's default score: the mean over cpu
// and memory of the share left free after the pod, 0-100, counting
// containers' missing requests at upstream's non-zero defaults.
func leastAllocated(pod *v1.Pod, node *v1.Node, u *Usage) int64 {
	cpu, mem := nonZeroRequests(pod)
	cpu += u.nonZero.milliCPU
	mem += u.nonZero.memory
	alloc := node.Status.Allocatable
	score := func(requested, capacity int64) int64 {
		if capacity == 0 || requested > capacity {
			return 0
		}
		return (capacity - requested) * 100 / capacity
	}
	return (score(cpu, alloc.Cpu().MilliValue()) + score(mem, alloc.Memory().Value())) / 2
}

func nonZeroRequests(pod *v1.Pod) (milliCPU, memory int64) {
	r := requests(pod, true)
	return r.milliCPU, r.memory
}
