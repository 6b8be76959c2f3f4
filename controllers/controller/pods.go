package controller

import (
	"math"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodsToDelete returns the diff pods of pods to delete first, as
// upstream's getPodsToDelete ranks them: unassigned before assigned,
// Pending before Unknown before Running, not ready before ready, lower
// pod-deletion-cost first, doubled up (more of related on the same node)
// first, ready for less time first, more restarts first, newer first
// (times compared on a logarithmic scale from now, so pods of about the
// same age tie and the uid decides).
func PodsToDelete(pods, related []*corev1.Pod, diff int, now time.Time) []*corev1.Pod {
	if diff >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range related {
		if p.Spec.NodeName != "" && Active(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranked := make([]rankedPod, len(pods))
	for i, p := range pods {
		ranked[i] = rankedPod{pod: p}
		if p.Spec.NodeName != "" {
			ranked[i].rank = onNode[p.Spec.NodeName]
		}
	}
	sort.SliceStable(ranked, func(i, j int) bool { return less(ranked[i], ranked[j], now) })
	out := make([]*corev1.Pod, diff)
	for i := range out {
		out[i] = ranked[i].pod
	}
	return out
}

// SortActive sorts pods in upstream's controller.ActivePods order, the
// order the Job controller removes pods in: unassigned before assigned,
// Pending before Unknown before Running, not ready before ready, ready for
// less time first, more restarts first, newer first. Unlike PodsToDelete
// it knows no pod-deletion-cost, no co-location rank and no logarithmic
// scale: upstream keeps those for ReplicaSets.
func SortActive(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool { return activeLess(pods[i], pods[j]) })
}

// activeLess is upstream's ActivePods.Less.
func activeLess(pa, pb *corev1.Pod) bool {
	if pa.Spec.NodeName != pb.Spec.NodeName && (pa.Spec.NodeName == "" || pb.Spec.NodeName == "") {
		return pa.Spec.NodeName == ""
	}
	if phaseOrder[pa.Status.Phase] != phaseOrder[pb.Status.Phase] {
		return phaseOrder[pa.Status.Phase] < phaseOrder[pb.Status.Phase]
	}
	if Ready(pa) != Ready(pb) {
		return !Ready(pa)
	}
	if Ready(pa) && Ready(pb) {
		if ta, tb := readyTime(pa), readyTime(pb); !ta.Equal(&tb) {
			return afterOrZero(ta, tb)
		}
	}
	if ra, rb := maxRestarts(pa), maxRestarts(pb); ra != rb {
		return ra > rb
	}
	if !pa.CreationTimestamp.Equal(&pb.CreationTimestamp) {
		return afterOrZero(pa.CreationTimestamp, pb.CreationTimestamp)
	}
	return false
}

// afterOrZero: a zero time first, else the later one.
func afterOrZero(a, b metav1.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero()
	}
	return a.After(b.Time)
}

type rankedPod struct {
	pod  *corev1.Pod
	rank int
}

var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// less is upstream's ActivePodsWithRanks.Less.
func less(a, b rankedPod, now time.Time) bool {
	pa, pb := a.pod, b.pod
	if pa.Spec.NodeName != pb.Spec.NodeName && (pa.Spec.NodeName == "" || pb.Spec.NodeName == "") {
		return pa.Spec.NodeName == ""
	}
	if phaseOrder[pa.Status.Phase] != phaseOrder[pb.Status.Phase] {
		return phaseOrder[pa.Status.Phase] < phaseOrder[pb.Status.Phase]
	}
	if Ready(pa) != Ready(pb) {
		return !Ready(pa)
	}
	if ca, cb := deletionCost(pa), deletionCost(pb); ca != cb {
		return ca < cb
	}
	if a.rank != b.rank {
		return a.rank > b.rank
	}
	if Ready(pa) && Ready(pb) {
		ta, tb := readyTime(pa), readyTime(pb)
		if !ta.Equal(&tb) {
			return newerFirst(ta, tb, pa, pb, now)
		}
	}
	if ra, rb := maxRestarts(pa), maxRestarts(pb); ra != rb {
		return ra > rb
	}
	if !pa.CreationTimestamp.Equal(&pb.CreationTimestamp) {
		return newerFirst(pa.CreationTimestamp, pb.CreationTimestamp, pa, pb, now)
	}
	return false
}

// newerFirst orders by time on upstream's logarithmic scale
// (LogarithmicScaleDown): zero times first, then the newer bucket.
func newerFirst(ta, tb metav1.Time, pa, pb *corev1.Pod, now time.Time) bool {
	if now.IsZero() || ta.IsZero() || tb.IsZero() {
		if ta.IsZero() || tb.IsZero() {
			return ta.IsZero()
		}
		return ta.After(tb.Time)
	}
	d := logBucket(now.Sub(ta.Time)) - logBucket(now.Sub(tb.Time))
	if d == 0 {
		return pa.UID < pb.UID
	}
	return d < 0
}

func logBucket(d time.Duration) int64 {
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[corev1.PodDeletionCost]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

func maxRestarts(p *corev1.Pod) int32 {
	var m int32
	for _, c := range p.Status.ContainerStatuses {
		m = max(m, c.RestartCount)
	}
	return m
}

// Ready says whether the pod's Ready condition is True.
func Ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func readyTime(p *corev1.Pod) metav1.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime
		}
	}
	return metav1.Time{}
}

// Available says whether the pod has been ready for minReadySeconds at
// now (upstream's IsPodAvailable).
func Available(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if !Ready(p) {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	t := readyTime(p)
	return !t.IsZero() && t.Add(time.Duration(minReadySeconds)*time.Second).Before(now)
}

// Active says whether the pod is neither finished nor being deleted
// (upstream's IsPodActive).
func Active(p *corev1.Pod) bool { return !Terminal(p) && p.DeletionTimestamp == nil }

// Terminal says whether the pod has finished: Succeeded or Failed.
func Terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Terminating says whether the pod is being deleted and has not finished
// (upstream's FilterTerminatingPods): no longer a replica, but running.
func Terminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil && !Terminal(p) }

// SlowStart calls fn count times in batches of 1, 2, 4, ... (each batch in
// parallel), stopping after the first batch with a failure, and returns
// how many calls succeeded and the first error: upstream's
// slowStartBatch, so a quota or an admission error costs one failed call
// rather than hundreds.
func SlowStart(count int, fn func() error) (int, error) {
	done := 0
	for batch := min(count, 1); batch > 0; batch = min(2*batch, count-done) {
		errs := make(chan error, batch)
		for range batch {
			go func() { errs <- fn() }()
		}
		var first error
		failed := 0
		for range batch {
			if err := <-errs; err != nil {
				failed++
				if first == nil {
					first = err
				}
			}
		}
		done += batch - failed
		if first != nil {
			return done, first
		}
	}
	return done, nil
}
