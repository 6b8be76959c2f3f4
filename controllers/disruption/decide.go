package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kite-project/kite/apis/policy/pdb"
	"github.com/kite-project/kite/controllers/controller"
)

// DeletionTimeout is how long a pod an eviction put in disruptedPods
// counts as going away without being seen deleted (upstream's).
const DeletionTimeout = 2 * time.Minute

// StalePodDisruptionTimeout is how long a pod keeps a DisruptionTarget
// condition an eviction set before the controller resets it, if the pod
// was not deleted meanwhile (upstream's stalePodDisruptionTimeout).
const StalePodDisruptionTimeout = 2 * time.Minute

// Scale is a pod's controller as the budget counts it: its uid and the
// replicas it asks for.
type Scale struct {
	UID      types.UID
	Replicas int32
}

// ScaleFinder returns the scale of the controller ref names for a pod of
// namespace: nil when that controller is not found (gone, or another
// object under its name), an error when it cannot be known.
type ScaleFinder func(namespace string, ref *metav1.OwnerReference) (*Scale, error)

// ExpectedCount is upstream's getExpectedPodCount: how many pods the
// budget's pods are expected to be (expectedPods) and how many of them
// must be healthy (desiredHealthy). An integer minAvailable counts the
// matching pods; a percentage, or maxUnavailable, counts the replicas
// of the pods' controllers, each once. Pods without a controller are
// returned as unmanaged (upstream warns and goes on).
func ExpectedCount(b *policyv1.PodDisruptionBudget, pods []*corev1.Pod, find ScaleFinder) (expected, desiredHealthy int32, unmanaged []string, err error) {
	switch {
	case b.Spec.MaxUnavailable != nil:
		expected, unmanaged, err = expectedScale(pods, find)
		if err != nil {
			return 0, 0, unmanaged, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, unmanaged, fmt.Errorf("maxUnavailable of %s/%s: %w", b.Namespace, b.Name, err)
		}
		desiredHealthy = max(expected-int32(maxUnavailable), 0)
	case b.Spec.MinAvailable != nil && b.Spec.MinAvailable.Type == intstr.Int:
		desiredHealthy = b.Spec.MinAvailable.IntVal
		expected = int32(len(pods))
	case b.Spec.MinAvailable != nil:
		expected, unmanaged, err = expectedScale(pods, find)
		if err != nil {
			return 0, 0, unmanaged, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, unmanaged, fmt.Errorf("minAvailable of %s/%s: %w", b.Namespace, b.Name, err)
		}
		desiredHealthy = int32(minAvailable)
	}
	return expected, desiredHealthy, unmanaged, nil
}

// expectedScale is upstream's getExpectedScale: the sum of the replicas
// of the pods' controllers, each counted once.
func expectedScale(pods []*corev1.Pod, find ScaleFinder) (int32, []string, error) {
	// By the controller's uid: a Deployment's pods name its ReplicaSets,
	// which all scale to the one Deployment.
	scales := map[types.UID]int32{}
	var unmanaged []string
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			unmanaged = append(unmanaged, p.Name)
			continue
		}
		if _, seen := scales[ref.UID]; seen {
			continue
		}
		s, err := find(p.Namespace, ref)
		if err != nil {
			return 0, unmanaged, err
		}
		if s == nil {
			return 0, unmanaged, fmt.Errorf("found no controllers for pod %q", p.Name)
		}
		scales[s.UID] = s.Replicas
	}
	var total int32
	for _, n := range scales {
		total += n
	}
	return total, unmanaged, nil
}

// DisruptedPods is upstream's buildDisruptedPodMap: the entries of
// status.disruptedPods still pending (the pod is there, not being
// deleted, and its DeletionTimeout has not passed), and when the first
// of them expires (nil: none).
func DisruptedPods(b *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) (map[string]metav1.Time, *time.Time) {
	out := map[string]metav1.Time{}
	var recheck *time.Time
	if b.Status.DisruptedPods == nil {
		return out, nil
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		at, found := b.Status.DisruptedPods[p.Name]
		if !found {
			continue
		}
		expires := at.Add(DeletionTimeout)
		if expires.Before(now) {
			continue // expected deleted long ago: it stays
		}
		if recheck == nil || expires.Before(*recheck) {
			recheck = &expires
		}
		out[p.Name] = at
	}
	return out, recheck
}

// CurrentHealthy is upstream's countHealthyPods: ready pods that are
// neither being deleted nor about to be (pending in disrupted).
func CurrentHealthy(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if at, found := disrupted[p.Name]; found && at.Add(DeletionTimeout).After(now) {
			continue
		}
		if controller.Ready(p) {
			n++
		}
	}
	return n
}

// Status is upstream's updatePdbStatus: the status the counts give b,
// and whether it differs from b's (nil when it does not). No disruption
// is allowed while the budget expects no pods, so a budget whose first
// pods appear before the controller has looked is safe.
func Status(b *policyv1.PodDisruptionBudget, currentHealthy, desiredHealthy, expected int32, disrupted map[string]metav1.Time) *policyv1.PodDisruptionBudget {
	allowed := currentHealthy - desiredHealthy
	if expected <= 0 || allowed <= 0 {
		allowed = 0
	}
	s := &b.Status
	if s.CurrentHealthy == currentHealthy && s.DesiredHealthy == desiredHealthy && s.ExpectedPods == expected &&
		s.DisruptionsAllowed == allowed && apiequality.Semantic.DeepEqual(s.DisruptedPods, disrupted) &&
		s.ObservedGeneration == b.Generation && pdb.ConditionsAreUpToDate(b) {
		return nil
	}
	out := b.DeepCopy()
	out.Status = policyv1.PodDisruptionBudgetStatus{
		CurrentHealthy:     currentHealthy,
		DesiredHealthy:     desiredHealthy,
		ExpectedPods:       expected,
		DisruptionsAllowed: allowed,
		DisruptedPods:      disrupted,
		ObservedGeneration: b.Generation,
		Conditions:         out.Status.Conditions,
	}
	pdb.UpdateDisruptionAllowedCondition(out)
	return out
}

// FailSafe is upstream's failSafe: when the status cannot be computed, no
// disruption is allowed, and the DisruptionAllowed condition says why
// (SyncFailed).
func FailSafe(b *policyv1.PodDisruptionBudget, err error) *policyv1.PodDisruptionBudget {
	out := b.DeepCopy()
	out.Status.DisruptionsAllowed = 0
	if out.Status.Conditions == nil {
		out.Status.Conditions = []metav1.Condition{}
	}
	apimeta.SetStatusCondition(&out.Status.Conditions, metav1.Condition{
		Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.SyncFailedReason,
		Message: err.Error(), ObservedGeneration: out.Status.ObservedGeneration,
	})
	return out
}

// StaleDisruptionTarget is upstream's
// nonTerminatingPodHasStaleDisruptionCondition: whether the pod carries a
// DisruptionTarget condition that nothing acted on (set True by an
// eviction, not by the kubelet, on a pod neither deleted nor finished),
// and how long until it is stale (0: now).
func StaleDisruptionTarget(p *corev1.Pod, now time.Time) (bool, time.Duration) {
	if p.DeletionTimestamp != nil || controller.Terminal(p) {
		return false, 0
	}
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status != corev1.ConditionTrue || c.Reason == corev1.PodReasonTerminationByKubelet {
			return false, 0
		}
		return true, max(StalePodDisruptionTimeout-now.Sub(c.LastTransitionTime.Time), 0)
	}
	return false, 0
}
