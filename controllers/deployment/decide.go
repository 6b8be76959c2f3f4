package deployment

import (
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/dump"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
)

// Annotations and labels upstream's deployment controller writes.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	// HashLabel tells the ReplicaSets (and pods) of one template apart.
	HashLabel = appsv1.DefaultDeploymentUniqueLabelKey
)

// Condition reasons, as upstream's deployment util.
const (
	ReasonNewRSAvailable   = "NewReplicaSetAvailable"
	ReasonRSUpdated        = "ReplicaSetUpdated"
	ReasonNewRSCreated     = "NewReplicaSetCreated"
	ReasonFoundNewRS       = "FoundNewReplicaSet"
	ReasonFailedRSCreate   = "ReplicaSetCreateError"
	ReasonTimedOut         = "ProgressDeadlineExceeded"
	ReasonPaused           = "DeploymentPaused"
	ReasonResumed          = "DeploymentResumed"
	ReasonMinAvailable     = "MinimumReplicasAvailable"
	ReasonMinUnavailable   = "MinimumReplicasUnavailable"
	annotationKubectlApply = "kubectl.kubernetes.io/last-applied-configuration"
)

// ComputeHash is upstream's controller.ComputeHash: FNV-32a of the
// template as dump.ForHash prints it, and of the collision count, safely
// encoded. The same template gets the same pod-template-hash as on a real
// cluster.
func ComputeHash(t *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*t))
	if collisionCount != nil {
		b := make([]byte, 8)
		b[0], b[1], b[2], b[3] = byte(*collisionCount), byte(*collisionCount>>8), byte(*collisionCount>>16), byte(*collisionCount>>24)
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// EqualIgnoreHash compares two templates, pod-template-hash aside.
func EqualIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, HashLabel)
	delete(b.Labels, HashLabel)
	if len(a.Labels) == 0 {
		a.Labels = nil
	}
	if len(b.Labels) == 0 {
		b.Labels = nil
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

// ResolveFenceposts turns maxSurge and maxUnavailable into numbers of
// pods for desired replicas: surge rounded up, unavailable down, and
// unavailable 1 if both come out 0 (upstream's ResolveFenceposts).
func ResolveFenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (int32, int32, error) {
	zero := intstr.FromInt32(0)
	if maxSurge == nil {
		maxSurge = &zero
	}
	if maxUnavailable == nil {
		maxUnavailable = &zero
	}
	surge, err := intstr.GetScaledValueFromIntOrPercent(maxSurge, int(desired), true)
	if err != nil {
		return 0, 0, err
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(maxUnavailable, int(desired), false)
	if err != nil {
		return 0, 0, err
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return int32(surge), int32(unavailable), nil
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}

func rolling(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && d.Spec.Strategy.RollingUpdate != nil
}

// MaxSurge is the deployment's surge in pods (0 unless RollingUpdate).
func MaxSurge(d *appsv1.Deployment) int32 {
	if !rolling(d) {
		return 0
	}
	s, _, _ := ResolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, replicas(d))
	return s
}

// MaxUnavailable is how many pods may be unavailable, at most replicas.
func MaxUnavailable(d *appsv1.Deployment) int32 {
	if !rolling(d) || replicas(d) == 0 {
		return 0
	}
	_, u, _ := ResolveFenceposts(d.Spec.Strategy.RollingUpdate.MaxSurge, d.Spec.Strategy.RollingUpdate.MaxUnavailable, replicas(d))
	return min(u, replicas(d))
}

func specTotal(sets []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range sets {
		n += rsReplicas(rs)
	}
	return n
}

func statusTotal(sets []*appsv1.ReplicaSet, f func(appsv1.ReplicaSetStatus) int32) int32 {
	var n int32
	for _, rs := range sets {
		if rs != nil {
			n += f(rs.Status)
		}
	}
	return n
}

// NewRSNewReplicas is how big the new ReplicaSet may be now: under
// RollingUpdate, grown by what maxSurge leaves room for; under Recreate,
// the deployment's replicas.
func NewRSNewReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	if !rolling(d) {
		return replicas(d)
	}
	current := specTotal(all)
	maxTotal := replicas(d) + MaxSurge(d)
	if current >= maxTotal {
		return rsReplicas(newRS)
	}
	up := min(maxTotal-current, replicas(d)-rsReplicas(newRS))
	return rsReplicas(newRS) + up
}

// ScaleDownOld returns, for RollingUpdate, the new sizes of old
// ReplicaSets (oldest first): first the unhealthy pods of each up to what
// availability allows (cleanupUnhealthyReplicas), then available ones
// while more than replicas-maxUnavailable stay available
// (scaleDownOldReplicaSetsForRollingUpdate).
func ScaleDownOld(d *appsv1.Deployment, old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) map[string]int32 {
	sizes := map[string]int32{}
	oldTotal := specTotal(old)
	if oldTotal == 0 {
		return sizes
	}
	sorted := append([]*appsv1.ReplicaSet(nil), old...)
	sort.SliceStable(sorted, func(i, j int) bool { return olderRS(sorted[i], sorted[j]) })
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	minAvailable := replicas(d) - MaxUnavailable(d)
	newUnavailable := rsReplicas(newRS) - statusOf(newRS).AvailableReplicas
	maxScaledDown := specTotal(all) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return sizes
	}
	size := func(rs *appsv1.ReplicaSet) int32 {
		if s, ok := sizes[rs.Name]; ok {
			return s
		}
		return rsReplicas(rs)
	}
	var cleaned int32
	for _, rs := range sorted {
		if cleaned >= maxScaledDown {
			break
		}
		if size(rs) == 0 || size(rs) == rs.Status.AvailableReplicas {
			continue
		}
		n := min(maxScaledDown-cleaned, size(rs)-rs.Status.AvailableReplicas)
		sizes[rs.Name] = size(rs) - n
		cleaned += n
	}
	available := statusTotal(all, func(s appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
	if available <= minAvailable {
		return sizes
	}
	total := available - minAvailable
	var scaled int32
	for _, rs := range sorted {
		if scaled >= total {
			break
		}
		if size(rs) == 0 {
			continue
		}
		n := min(size(rs), total-scaled)
		sizes[rs.Name] = size(rs) - n
		scaled += n
	}
	return sizes
}

func statusOf(rs *appsv1.ReplicaSet) appsv1.ReplicaSetStatus {
	if rs == nil {
		return appsv1.ReplicaSetStatus{}
	}
	return rs.Status
}

func olderRS(a, b *appsv1.ReplicaSet) bool {
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.Name < b.Name
	}
	return a.CreationTimestamp.Before(&b.CreationTimestamp)
}

// Revision is a ReplicaSet's revision annotation (0 if none).
func Revision(m metav1.Object) int64 {
	v, err := strconv.ParseInt(m.GetAnnotations()[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// ToClean returns the old ReplicaSets beyond revisionHistoryLimit to
// delete, lowest revision first, keeping any that still has pods or whose
// status lags its spec.
func ToClean(d *appsv1.Deployment, old []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := len(alive) - int(*d.Spec.RevisionHistoryLimit)
	if diff <= 0 {
		return nil
	}
	sort.SliceStable(alive, func(i, j int) bool {
		ri, rj := Revision(alive[i]), Revision(alive[j])
		if ri == rj {
			return olderRS(alive[i], alive[j])
		}
		return ri < rj
	})
	var out []*appsv1.ReplicaSet
	for _, rs := range alive[:diff] {
		if rs.Status.Replicas != 0 || rsReplicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		out = append(out, rs)
	}
	return out
}

// HasProgressDeadline: progressDeadlineSeconds set and not MaxInt32.
func HasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

// Condition returns the condition of type t, or nil.
func Condition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

func newCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, msg string, now time.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: status, Reason: reason, Message: msg,
		LastUpdateTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
}

// setCondition is upstream's SetDeploymentCondition: the same status and
// reason change nothing; the same status keeps lastTransitionTime.
func setCondition(s *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	if cur := Condition(s, c.Type); cur != nil {
		if cur.Status == c.Status && cur.Reason == c.Reason {
			return
		}
		if cur.Status == c.Status {
			c.LastTransitionTime = cur.LastTransitionTime
		}
	}
	removeCondition(s, c.Type)
	s.Conditions = append(s.Conditions, c)
}

func removeCondition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	out := s.Conditions[:0]
	for _, c := range s.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	s.Conditions = out
	if len(s.Conditions) == 0 {
		s.Conditions = nil
	}
}

// Status is upstream's calculateStatus: counts summed over the
// ReplicaSets, and Available True once availableReplicas reaches
// replicas-maxUnavailable.
func Status(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now time.Time) appsv1.DeploymentStatus {
	available := statusTotal(all, func(s appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas })
	s := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            statusTotal(all, func(s appsv1.ReplicaSetStatus) int32 { return s.Replicas }),
		UpdatedReplicas:     statusOf(newRS).Replicas,
		ReadyReplicas:       statusTotal(all, func(s appsv1.ReplicaSetStatus) int32 { return s.ReadyReplicas }),
		AvailableReplicas:   available,
		UnavailableReplicas: max(specTotal(all)-available, 0),
		CollisionCount:      d.Status.CollisionCount,
		TerminatingReplicas: TerminatingReplicas(all),
	}
	s.Conditions = append(s.Conditions, d.Status.Conditions...)
	if available >= replicas(d)-MaxUnavailable(d) {
		setCondition(&s, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&s, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinUnavailable, "Deployment does not have minimum availability.", now))
	}
	return s
}

// TerminatingReplicas is upstream's GetTerminatingReplicaCountForReplicaSets
// (feature DeploymentReplicaSetTerminatingReplicas, on by default since
// 1.35): the ReplicaSets' terminating pods summed. A ReplicaSet its
// controller has not synced yet (observedGeneration 0) counts none; one
// it has synced without reporting them (a controller without the
// feature) makes the sum unknown, nil.
func TerminatingReplicas(sets []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range sets {
		if rs == nil {
			continue
		}
		switch t := rs.Status.TerminatingReplicas; {
		case t != nil:
			n += *t
		case rs.Status.ObservedGeneration != 0:
			return nil
		}
	}
	return &n
}

// Complete: every replica updated and available, at the current
// generation.
func Complete(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	r := replicas(d)
	return s.UpdatedReplicas == r && s.Replicas == r && s.AvailableReplicas == r && s.ObservedGeneration >= d.Generation
}

// Progressing: more updated, ready or available pods than last time, or
// fewer old ones.
func Progressing(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	old := d.Status
	return s.UpdatedReplicas > old.UpdatedReplicas || s.Replicas-s.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		s.ReadyReplicas > old.ReadyReplicas || s.AvailableReplicas > old.AvailableReplicas
}

// TimedOut: the Progressing condition was last updated more than
// progressDeadlineSeconds ago and the rollout is not complete.
func TimedOut(d *appsv1.Deployment, s *appsv1.DeploymentStatus, now time.Time) bool {
	if !HasProgressDeadline(d) {
		return false
	}
	c := Condition(s, appsv1.DeploymentProgressing)
	switch {
	case c == nil || c.Reason == ReasonNewRSAvailable:
		return false
	case c.Reason == ReasonTimedOut:
		return true
	}
	return c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Before(now)
}

// RolloutStatus adds to a calculated status the Progressing condition
// upstream's syncRolloutStatus sets.
func RolloutStatus(d *appsv1.Deployment, s appsv1.DeploymentStatus, newRS *appsv1.ReplicaSet, now time.Time) appsv1.DeploymentStatus {
	if !HasProgressDeadline(d) {
		removeCondition(&s, appsv1.DeploymentProgressing)
		return s
	}
	cur := Condition(&d.Status, appsv1.DeploymentProgressing)
	if s.Replicas == s.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewRSAvailable {
		return s
	}
	subject := fmt.Sprintf("Deployment %q", d.Name)
	if newRS != nil {
		subject = fmt.Sprintf("ReplicaSet %q", newRS.Name)
	}
	switch {
	case Complete(d, &s):
		setCondition(&s, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSAvailable, subject+" has successfully progressed.", now))
	case Progressing(d, &s):
		c := newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated, subject+" is progressing.", now)
		if cur != nil {
			if cur.Status == corev1.ConditionTrue {
				c.LastTransitionTime = cur.LastTransitionTime
			}
			removeCondition(&s, appsv1.DeploymentProgressing)
		}
		setCondition(&s, c)
	case TimedOut(d, &s, now):
		setCondition(&s, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonTimedOut, subject+" has timed out progressing.", now))
	}
	return s
}

// ProportionalSizes are the new sizes of the ReplicaSets of a Deployment
// whose replicas changed (or that is paused), as upstream's scale: a lone
// active (or the newest) ReplicaSet takes all replicas; a saturated new
// one leaves the old ones at 0; otherwise, under RollingUpdate, the
// difference to replicas+maxSurge is shared in proportion to each
// ReplicaSet's size (by its max-replicas annotation), the largest taking
// the rounding leftovers.
func ProportionalSizes(d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) map[string]int32 {
	sizes := map[string]int32{}
	all := active(append(slices.Clone(old), newRS))
	if len(all) <= 1 {
		target := newRS
		switch {
		case len(all) == 1:
			target = all[0]
		case target == nil && len(old) > 0:
			newest := slices.Clone(old)
			sort.SliceStable(newest, func(i, j int) bool { return olderRS(newest[j], newest[i]) })
			target = newest[0]
		}
		if target != nil && rsReplicas(target) != replicas(d) {
			sizes[target.Name] = replicas(d)
		}
		return sizes
	}
	if saturated(d, newRS) {
		for _, rs := range active(old) {
			sizes[rs.Name] = 0
		}
		return sizes
	}
	if !rolling(d) {
		return sizes
	}
	allowed := int32(0)
	if replicas(d) > 0 {
		allowed = replicas(d) + MaxSurge(d)
	}
	toAdd := allowed - specTotal(all)
	if toAdd == 0 {
		return sizes
	}
	sort.SliceStable(all, func(i, j int) bool {
		if rsReplicas(all[i]) != rsReplicas(all[j]) {
			return rsReplicas(all[i]) > rsReplicas(all[j])
		}
		if toAdd > 0 {
			return olderRS(all[j], all[i]) // newer first when growing
		}
		return olderRS(all[i], all[j])
	})
	var added int32
	for _, rs := range all {
		p := proportion(d, rs, toAdd, added)
		sizes[rs.Name] = rsReplicas(rs) + p
		added += p
	}
	sizes[all[0].Name] = max(sizes[all[0].Name]+toAdd-added, 0)
	return sizes
}

func proportion(d *appsv1.Deployment, rs *appsv1.ReplicaSet, toAdd, added int32) int32 {
	if rsReplicas(rs) == 0 || toAdd == added {
		return 0
	}
	var fraction int32
	if replicas(d) == 0 {
		fraction = -rsReplicas(rs)
	} else {
		total := replicas(d) + MaxSurge(d)
		annotated := d.Status.Replicas
		if v, err := strconv.ParseInt(rs.Annotations[MaxReplicasAnnotation], 10, 32); err == nil {
			annotated = int32(v)
		}
		if annotated == 0 {
			return 0
		}
		fraction = int32(math.Round(float64(rsReplicas(rs)*total)/float64(annotated))) - rsReplicas(rs)
	}
	if toAdd > 0 {
		return min(fraction, toAdd-added)
	}
	return max(fraction, toAdd-added)
}

func saturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, err := strconv.Atoi(rs.Annotations[DesiredReplicasAnnotation])
	return err == nil && rsReplicas(rs) == replicas(d) && int32(desired) == replicas(d) && rs.Status.AvailableReplicas == replicas(d)
}

func active(sets []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range sets {
		if rs != nil && rsReplicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// NewRSRevision is the revision a Deployment's new ReplicaSet gets: one
// above the highest of the old ones.
func NewRSRevision(old []*appsv1.ReplicaSet) string {
	var maxOld int64
	for _, rs := range old {
		maxOld = max(maxOld, Revision(rs))
	}
	return strconv.FormatInt(maxOld+1, 10)
}

// UpdatedNewRS brings the existing new ReplicaSet up to date with the
// Deployment: its annotations and revision (SetNewRSAnnotations) and its
// minReadySeconds. It returns a copy, and whether it must be written.
func UpdatedNewRS(d *appsv1.Deployment, existing *appsv1.ReplicaSet, revision string) (*appsv1.ReplicaSet, bool) {
	rs := existing.DeepCopy()
	changed := SetNewRSAnnotations(d, rs, revision, true)
	if !changed && rs.Spec.MinReadySeconds == d.Spec.MinReadySeconds {
		return rs, false
	}
	rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
	return rs, true
}

// FoundNewRS records on d an up-to-date new ReplicaSet: its revision
// annotation and, with a progress deadline and no Progressing condition
// yet, Progressing FoundNewReplicaSet. It says whether d changed.
func FoundNewRS(d *appsv1.Deployment, rs *appsv1.ReplicaSet, now time.Time) bool {
	changed := setRevision(d, rs.Annotations[RevisionAnnotation])
	if HasProgressDeadline(d) && Condition(&d.Status, appsv1.DeploymentProgressing) == nil {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewRS, fmt.Sprintf("Found new replica set %q", rs.Name), now))
		changed = true
	}
	return changed
}

// NewReplicaSet is the ReplicaSet made for d's template, as upstream's
// getNewReplicaSet: named <deployment>-<pod-template-hash> (the hash of
// the template and the collision count), the hash added to its template's
// labels and its selector, d as controller, sized as NewRSNewReplicas
// allows and annotated as SetNewRSAnnotations.
func NewReplicaSet(d *appsv1.Deployment, old []*appsv1.ReplicaSet, revision string) *appsv1.ReplicaSet {
	t := *d.Spec.Template.DeepCopy()
	hash := ComputeHash(&t, d.Status.CollisionCount)
	t.Labels = maps.Clone(t.Labels)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[HashLabel] = hash
	sel := d.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[HashLabel] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: t.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, kind)}},
		Spec: appsv1.ReplicaSetSpec{Replicas: new(int32), MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: t},
	}
	*rs.Spec.Replicas = NewRSNewReplicas(d, append(slices.Clone(old), rs), rs)
	SetNewRSAnnotations(d, rs, revision, false)
	return rs
}

// CreatedNewRS records on d the creation of its new ReplicaSet: the
// revision annotation and, with a progress deadline, Progressing
// NewReplicaSetCreated.
func CreatedNewRS(d *appsv1.Deployment, name, revision string, now time.Time) {
	setRevision(d, revision)
	if HasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSCreated, fmt.Sprintf("Created new replica set %q", name), now))
	}
}

// OwnNewRS says whether the ReplicaSet found under the new ReplicaSet's
// name is d's, for d's template: made by an earlier pass the cache has not
// shown yet. Otherwise the name is taken by another: a hash collision.
func OwnNewRS(d *appsv1.Deployment, got *appsv1.ReplicaSet) bool {
	ref := metav1.GetControllerOf(got)
	return ref != nil && ref.UID == d.UID && EqualIgnoreHash(&got.Spec.Template, &d.Spec.Template)
}

// RaiseCollisionCount raises d's status.collisionCount after a hash
// collision, so that the next new ReplicaSet's hash differs, and returns
// it.
func RaiseCollisionCount(d *appsv1.Deployment) int32 {
	var n int32
	if d.Status.CollisionCount != nil {
		n = *d.Status.CollisionCount
	}
	n++
	d.Status.CollisionCount = &n
	return n
}

// FailedNewRS records on d that its new ReplicaSet could not be made:
// with a progress deadline, Progressing False ReplicaSetCreateError. It
// returns the message (for the FailedCreate event) and whether d changed.
func FailedNewRS(d *appsv1.Deployment, name string, err error, now time.Time) (string, bool) {
	msg := fmt.Sprintf("Failed to create new replica set %q: %v", name, err)
	if !HasProgressDeadline(d) {
		return msg, false
	}
	setCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedRSCreate, msg, now))
	return msg, true
}

// setRevision sets the Deployment's revision annotation.
func setRevision(d *appsv1.Deployment, revision string) bool {
	if d.Annotations[RevisionAnnotation] == revision || revision == "" {
		return false
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RevisionAnnotation] = revision
	return true
}

// SetNewRSAnnotations is upstream's SetNewReplicaSetAnnotations: the
// Deployment's annotations (but its own bookkeeping ones) copied, the
// revision raised (the old one kept in revision-history), and, for a
// ReplicaSet being made, the desired and max replicas. It says whether rs
// changed.
func SetNewRSAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, revision string, exists bool) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		switch k {
		case annotationKubectlApply, RevisionAnnotation, RevisionHistoryAnnotation, DesiredReplicasAnnotation, MaxReplicasAnnotation:
			continue
		}
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	oldRevision := rs.Annotations[RevisionAnnotation]
	oldN, _ := strconv.ParseInt(oldRevision, 10, 64)
	newN, _ := strconv.ParseInt(revision, 10, 64)
	if oldRevision == "" || oldN < newN {
		rs.Annotations[RevisionAnnotation] = revision
		changed = true
		if oldRevision != "" {
			if h := rs.Annotations[RevisionHistoryAnnotation]; h == "" {
				rs.Annotations[RevisionHistoryAnnotation] = oldRevision
			} else {
				rs.Annotations[RevisionHistoryAnnotation] = h + "," + oldRevision
			}
		}
	}
	if !exists && setReplicasAnnotations(rs, replicas(d), replicas(d)+MaxSurge(d)) {
		changed = true
	}
	return changed
}

func setReplicasAnnotations(rs *appsv1.ReplicaSet, desired, maxReplicas int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	d, m := strconv.Itoa(int(desired)), strconv.Itoa(int(maxReplicas))
	if rs.Annotations[DesiredReplicasAnnotation] == d && rs.Annotations[MaxReplicasAnnotation] == m {
		return false
	}
	rs.Annotations[DesiredReplicasAnnotation], rs.Annotations[MaxReplicasAnnotation] = d, m
	return true
}
