package statefulset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kite-project/kite/controllers/controller"
)

// Ordinal is the ordinal of a pod of set: the number after "<set>-" in
// its name, or -1 when the name is not of that form.
func Ordinal(set string, pod string) int {
	rest, ok := strings.CutPrefix(pod, set+"-")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return -1
	}
	return n
}

// PodName is <set>-<ordinal>.
func PodName(set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

// ClaimName is upstream's getPersistentVolumeClaimName:
// <template>-<set>-<ordinal>.
func ClaimName(set *appsv1.StatefulSet, template string, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template, set.Name, ordinal)
}

func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func replicas(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// ActionType is what the controller does to one ordinal.
type ActionType string

const (
	// Create makes the pod of the ordinal (its claims first) at the
	// action's revision.
	Create ActionType = "Create"
	// Delete deletes the action's pod: failed, condemned by a scale
	// down, or at an old revision during a rolling update.
	Delete ActionType = "Delete"
)

// Action is one write, in the order a Plan lists them.
type Action struct {
	Type    ActionType
	Ordinal int
	// Revision is the revision (name) a created pod is made from: the
	// current one below the partition, else the update one.
	Revision string
	// Pod is the pod to delete.
	Pod *corev1.Pod
	// Condemned says a deleted pod goes for good (scale down): its
	// claims follow the whenScaled retention policy.
	Condemned bool
	// Step is the pass of upstream's updateStatefulSet that planned it:
	// the replicas, the condemned pods, the rolling update. A Parallel
	// set's runner finishes one step before the next, as upstream.
	Step Step
}

// Step is a pass of the plan.
type Step int

const (
	// ReplicaStep makes missing replicas and deletes finished ones.
	ReplicaStep Step = iota
	// CondemnedStep deletes the pods a scale down condemned.
	CondemnedStep
	// UpdateStep deletes pods of an old revision, one at a time.
	UpdateStep
)

// Input is what Decide looks at: the set, the pods it owns (any phase,
// terminating included), the names of its current and update revisions
// and the clock.
type Input struct {
	Set                             *appsv1.StatefulSet
	Pods                            []*corev1.Pod
	CurrentRevision, UpdateRevision string
	Now                             time.Time
}

// Plan is Decide's answer: the writes in order and the status the pods
// show. Wait, when set, is how long until a pod may count as available
// (minReadySeconds), for a requeue.
type Plan struct {
	Actions []Action
	Status  appsv1.StatefulSetStatus
	Wait    time.Duration
}

func healthy(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && controller.Ready(p) && p.DeletionTimestamp == nil
}

func available(p *corev1.Pod, set *appsv1.StatefulSet, now time.Time) bool {
	return healthy(p) && controller.Available(p, set.Spec.MinReadySeconds, now)
}

func revisionOf(p *corev1.Pod) string { return p.Labels[appsv1.ControllerRevisionHashLabelKey] }

// Decide is upstream's StatefulSetControl.updateStatefulSet as one pure
// function. Ordinals [start, start+replicas) are the set's replicas, any
// other is condemned. With OrderedReady (monotonic) management it does
// one thing at a time and waits for every lower ordinal to be Running and
// Ready (and available after minReadySeconds) before the next: missing
// pods are made lowest ordinal first, condemned ones deleted highest
// first, and only once all replicas are healthy. Parallel makes and
// deletes them all at once. Failed or succeeded pods are deleted (and made
// again next time). A RollingUpdate then deletes, highest ordinal first
// and down to the partition, pods not at the update revision, while fewer
// than maxUnavailable of those ordinals are unavailable; OnDelete leaves
// that to the user.
func Decide(in Input) Plan {
	set := in.Set
	start, n := startOrdinal(set), replicas(set)
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	plan := Plan{Status: status(in)}

	slots := make([]*corev1.Pod, n)
	var condemned []*corev1.Pod
	for _, p := range in.Pods {
		switch o := Ordinal(set.Name, p.Name); {
		case o < 0:
		case o >= start && o < start+n:
			slots[o-start] = p
		default:
			condemned = append(condemned, p)
		}
	}
	slices.SortFunc(condemned, func(a, b *corev1.Pod) int { return Ordinal(set.Name, a.Name) - Ordinal(set.Name, b.Name) })
	if set.DeletionTimestamp != nil {
		return plan
	}
	// The first unhealthy pod, replicas first then condemned: the one a
	// monotonic scale down may delete without waiting for it.
	var firstUnhealthy *corev1.Pod
	for _, p := range append(slices.Clone(slots), condemned...) {
		if p != nil && !healthy(p) {
			firstUnhealthy = p
			break
		}
	}

	partition := 0
	if ru := set.Spec.UpdateStrategy.RollingUpdate; set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil && ru.Partition != nil {
		partition = int(*ru.Partition)
	}
	for i, p := range slots {
		ordinal := start + i
		switch {
		case p == nil:
			rev := in.UpdateRevision
			if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && i < partition {
				rev = in.CurrentRevision
			}
			plan.Actions = append(plan.Actions, Action{Type: Create, Ordinal: ordinal, Revision: rev})
			if monotonic {
				return plan
			}
		case controller.Terminal(p):
			if p.DeletionTimestamp == nil {
				plan.Actions = append(plan.Actions, Action{Type: Delete, Ordinal: ordinal, Pod: p})
			}
			if monotonic {
				return plan
			}
		case p.DeletionTimestamp != nil:
			if monotonic {
				return plan // wait for it to go, then make it again
			}
		case !healthy(p):
			if monotonic {
				return plan
			}
		case !available(p, set, in.Now):
			if monotonic {
				plan.Wait = untilAvailable(p, set, in.Now)
				return plan
			}
		}
	}

	for i := len(condemned) - 1; i >= 0; i-- {
		p := condemned[i]
		if p.DeletionTimestamp != nil {
			if monotonic {
				return plan
			}
			continue
		}
		if monotonic && !healthy(p) && p != firstUnhealthy {
			return plan
		}
		plan.Actions = append(plan.Actions, Action{Type: Delete, Ordinal: Ordinal(set.Name, p.Name), Pod: p, Condemned: true, Step: CondemnedStep})
		if monotonic {
			return plan
		}
	}

	if set.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
		return plan
	}
	maxUnavailable := 1
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		if v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, n, true); err == nil && v > 1 {
			maxUnavailable = v
		}
	}
	unavailable := 0
	for i := n - 1; i >= partition; i-- {
		if slots[i] == nil || !available(slots[i], set, in.Now) {
			unavailable++
		}
	}
	for i := n - 1; i >= partition && unavailable < maxUnavailable; i-- {
		p := slots[i]
		if p == nil || p.DeletionTimestamp != nil || revisionOf(p) == in.UpdateRevision {
			continue
		}
		plan.Actions = append(plan.Actions, Action{Type: Delete, Ordinal: start + i, Pod: p, Step: UpdateStep})
		if available(p, set, in.Now) {
			unavailable++
		}
	}
	return plan
}

func untilAvailable(p *corev1.Pod, set *appsv1.StatefulSet, now time.Time) time.Duration {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			if d := c.LastTransitionTime.Add(time.Duration(set.Spec.MinReadySeconds) * time.Second).Sub(now); d > 0 {
				return d
			}
		}
	}
	return time.Second
}

// Status is the status the set's pods give it: the one Decide plans. The
// runner calls it again with the pods it has just created, as the server
// returned them (phase Pending), so that one status write counts them
// rather than a second one after their watch events.
func Status(in Input) appsv1.StatefulSetStatus { return status(in) }

// status is upstream's computeReplicaStatus plus completeRollingUpdate:
// the pods that exist, are Ready, available, at the current and at the
// update revision; once every pod is at the update revision and Ready,
// the update revision becomes the current one.
func status(in Input) appsv1.StatefulSetStatus {
	set := in.Set
	s := appsv1.StatefulSetStatus{ObservedGeneration: set.Generation, CurrentRevision: in.CurrentRevision,
		UpdateRevision: in.UpdateRevision, CollisionCount: set.Status.CollisionCount}
	for _, p := range in.Pods {
		if Ordinal(set.Name, p.Name) < 0 {
			continue
		}
		if p.Status.Phase != "" {
			s.Replicas++
		}
		if healthy(p) {
			s.ReadyReplicas++
			if available(p, set, in.Now) {
				s.AvailableReplicas++
			}
		}
		if p.Status.Phase != "" && p.DeletionTimestamp == nil {
			switch rev := revisionOf(p); {
			case rev == in.CurrentRevision && rev == in.UpdateRevision:
				s.CurrentReplicas++
				s.UpdatedReplicas++
			case rev == in.CurrentRevision:
				s.CurrentReplicas++
			case rev == in.UpdateRevision:
				s.UpdatedReplicas++
			}
		}
	}
	if set.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		s.UpdatedReplicas == s.Replicas && s.ReadyReplicas == s.Replicas {
		s.CurrentReplicas = s.UpdatedReplicas
		s.CurrentRevision = s.UpdateRevision
	}
	return s
}
