package config

import (
	"fmt"
	"maps"
	"reflect"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kite-project/kite/agent/kubetypes"
)

// State is what the merge remembers between updates: for each source, the
// pods it last sent and which of them were accepted. A State is immutable:
// Merge returns a new one and never changes the one it is given, so a State
// may be read from anywhere at any time. The zero State is empty.
type State struct {
	sources map[string]*sourceState
}

// sourceState is one source's part of the State. Never mutated once built;
// neither are the pods it points to.
type sourceState struct {
	// seen: the source has sent at least one SET.
	seen bool
	// wanted is the source's last snapshot, without its own duplicates, in
	// its order. Kept so that pods refused because another source claimed
	// their name can be accepted when that source lets the name go.
	wanted []*v1.Pod
	// accepted are the pods the agent runs for this source, by UID, as sent
	// to the consumer (with the agent's annotations); order is their order.
	accepted map[types.UID]*v1.Pod
	order    []types.UID
	// refused holds the keys (see refusalKey) of pods refused and reported,
	// so that a refusal is reported once while it lasts.
	refused map[string]bool
}

// Result is what one Merge emits.
type Result struct {
	// Updates are the operations for the consumer, in the order to send
	// them. Each has at least one pod, except a source's first-report ADD.
	// The pods are copies owned by the receiver.
	Updates []kubetypes.PodUpdate
	// Problems are the pods refused by this merge, newly.
	Problems []kubetypes.Problem
}

// Seen says whether source has sent its first complete snapshot (SET).
func (s State) Seen(source string) bool {
	ss := s.sources[source]
	return ss != nil && ss.seen
}

// SeenAll says whether every one of sources has been seen.
func (s State) SeenAll(sources ...string) bool {
	for _, source := range sources {
		if !s.Seen(source) {
			return false
		}
	}
	return true
}

// Pods returns copies of the accepted pods of all sources, sources in name
// order and each source's pods in its order.
func (s State) Pods() []*v1.Pod {
	names := make([]string, 0, len(s.sources))
	for name := range s.sources {
		names = append(names, name)
	}
	sort.Strings(names)
	var pods []*v1.Pod
	for _, name := range names {
		ss := s.sources[name]
		for _, uid := range ss.order {
			pods = append(pods, ss.accepted[uid].DeepCopy())
		}
	}
	return pods
}

// Merge applies one source's update to prev and returns the next state and
// what to emit. Sources send SET (the complete set of their pods); ADD,
// UPDATE and DELETE upsert the given pods into the source's last set and
// REMOVE takes them out of it, as upstream's incremental inputs. now is
// recorded as the first-seen time of new pods. Merge does not modify prev,
// u or u's pods; it keeps u's pods (uncopied), so the sender must not modify
// them after sending, as with any value sent on a channel.
func Merge(prev State, u kubetypes.PodUpdate, now time.Time) (State, Result) {
	var res Result
	if u.Source == "" {
		res.Problems = append(res.Problems, kubetypes.Problem{Reason: kubetypes.ReasonFailedValidation,
			Err: fmt.Errorf("update %s of %d pods has no source, ignored", u.Op, len(u.Pods))})
		return prev, res
	}
	old := prev.sources[u.Source]
	if old == nil {
		old = &sourceState{}
	}
	var wanted []*v1.Pod
	seen := old.seen
	switch u.Op {
	case kubetypes.SET:
		wanted, seen = u.Pods, true
	case kubetypes.ADD, kubetypes.UPDATE, kubetypes.DELETE:
		wanted = upsert(old.wanted, u.Pods)
	case kubetypes.REMOVE:
		wanted = without(old.wanted, u.Pods)
	default:
		res.Problems = append(res.Problems, kubetypes.Problem{Source: u.Source, Reason: kubetypes.ReasonFailedValidation,
			Err: fmt.Errorf("update operation %s is not an input operation, ignored", u.Op)})
		return prev, res
	}

	next := State{sources: maps.Clone(prev.sources)}
	if next.sources == nil {
		next.sources = map[string]*sourceState{}
	}
	wanted, dups, problems := dedupe(u.Source, wanted, old.refused)
	res.Problems = append(res.Problems, problems...)
	ss, ops, problems := mergeSource(next, u.Source, old, wanted, dups, seen, now)
	next.sources[u.Source] = ss
	res.Updates = append(res.Updates, ops...)
	res.Problems = append(res.Problems, problems...)

	// Names this source let go may be wanted by other sources that were
	// refused them: give those sources another go, in name order.
	for _, other := range sortedKeys(next.sources) {
		oss := next.sources[other]
		if other == u.Source || !hasClaimRefusals(oss) {
			continue
		}
		nss, ops, problems := mergeSource(next, other, oss, oss.wanted, duplicateRefusals(oss.refused), oss.seen, now)
		next.sources[other] = nss
		res.Updates = append(res.Updates, ops...)
		res.Problems = append(res.Problems, problems...)
	}
	return next, res
}

// mergeSource computes source's next state from its wanted pods, given the
// claims of the other sources in st, and the operations that take the
// consumer from old to it.
// dups are the refusals of wanted's own duplicates (by dedupe), to keep;
// refusals because of other sources' claims are computed here.
func mergeSource(st State, source string, old *sourceState, wanted []*v1.Pod, dups map[string]bool, seen bool, now time.Time) (*sourceState, []kubetypes.PodUpdate, []kubetypes.Problem) {
	claims := claimsExcept(st, source)
	ss := &sourceState{
		seen:     seen,
		wanted:   wanted,
		accepted: make(map[types.UID]*v1.Pod, len(wanted)),
		order:    make([]types.UID, 0, len(wanted)),
		refused:  dups,
	}
	sent := make(map[types.UID]*v1.Pod, len(old.wanted))
	for _, p := range old.wanted {
		sent[p.UID] = p
	}
	var problems []kubetypes.Problem
	var adds, updates, deletes, reconciles []*v1.Pod
	for _, in := range wanted {
		if owner, what, taken := claims.owner(in); taken && !kubetypes.IsMirrorPod(in) {
			key := refusalKey(claimRefusal, in)
			ss.refused[key] = true
			if !old.refused[key] {
				problems = append(problems, kubetypes.Problem{Source: source, Reason: kubetypes.ReasonDuplicatePod,
					Err: fmt.Errorf("pod %s/%s (uid %s): its %s is already taken by a pod of source %q, ignored while that source has it",
						in.Namespace, in.Name, in.UID, what, owner)})
			}
			continue
		}
		existing, found := old.accepted[in.UID]
		if !found {
			pod := in.DeepCopy()
			setAnnotation(pod, kubetypes.ConfigSourceAnnotationKey, source)
			setAnnotation(pod, kubetypes.ConfigFirstSeenAnnotationKey, now.UTC().Format(time.RFC3339Nano))
			ss.accepted[pod.UID] = pod
			ss.order = append(ss.order, pod.UID)
			adds = append(adds, pod)
			continue
		}
		if sent[in.UID] == in {
			// The very object the source sent last time, unchanged since
			// (senders do not modify what they sent): nothing to compare.
			// Sources that keep their objects (the file source, an
			// UndeltaStore) make identical snapshots cost almost nothing.
			ss.accepted[existing.UID] = existing
			ss.order = append(ss.order, existing.UID)
			continue
		}
		stored, op, changed := compare(existing, in, source)
		ss.accepted[stored.UID] = stored
		ss.order = append(ss.order, stored.UID)
		if !changed {
			continue
		}
		switch op {
		case kubetypes.UPDATE:
			updates = append(updates, stored)
		case kubetypes.DELETE:
			deletes = append(deletes, stored)
		case kubetypes.RECONCILE:
			reconciles = append(reconciles, stored)
		}
	}
	var removes []*v1.Pod
	for _, uid := range old.order {
		if _, kept := ss.accepted[uid]; !kept {
			removes = append(removes, old.accepted[uid])
		}
	}

	var ops []kubetypes.PodUpdate
	emit := func(op kubetypes.Op, pods []*v1.Pod) {
		if len(pods) > 0 {
			ops = append(ops, kubetypes.PodUpdate{Op: op, Source: source, Pods: copyPods(pods)})
		}
	}
	emit(kubetypes.REMOVE, removes)
	emit(kubetypes.ADD, adds)
	emit(kubetypes.UPDATE, updates)
	emit(kubetypes.DELETE, deletes)
	if seen && !old.seen && len(adds) == 0 && len(updates) == 0 && len(deletes) == 0 {
		// The first report of a source with nothing to run: tell the
		// consumer the source is ready, as upstream does.
		ops = append(ops, kubetypes.PodUpdate{Op: kubetypes.ADD, Source: source, Pods: []*v1.Pod{}})
	}
	emit(kubetypes.RECONCILE, reconciles)
	return ss, ops, problems
}

// compare classifies a known pod's new version as upstream's
// checkAndUpdatePod does. It returns the pod to store (existing itself when
// nothing changed) and, when changed, the operation to emit.
func compare(existing, in *v1.Pod, source string) (stored *v1.Pod, op kubetypes.Op, changed bool) {
	if !podsDifferSemantically(existing, in) {
		if reflect.DeepEqual(&existing.Status, &in.Status) {
			return existing, 0, false
		}
		stored = existing.DeepCopy()
		stored.Status = *in.Status.DeepCopy()
		return stored, kubetypes.RECONCILE, true
	}
	// Keep existing's metadata (resourceVersion and the like, which do not
	// matter to the agent) and take what does.
	ref := in.DeepCopy()
	stored = existing.DeepCopy()
	stored.Spec = ref.Spec
	stored.Labels = ref.Labels
	stored.DeletionTimestamp = ref.DeletionTimestamp
	stored.DeletionGracePeriodSeconds = ref.DeletionGracePeriodSeconds
	// The generation too: the status reports it as observedGeneration.
	stored.Generation = ref.Generation
	stored.Status = ref.Status
	annotations := make(map[string]string, len(ref.Annotations)+len(localAnnotations))
	for k, v := range ref.Annotations {
		if !isLocalAnnotationKey(k) || k == kubetypes.ConfigMirrorAnnotationKey {
			annotations[k] = v
		}
	}
	for _, k := range localAnnotations {
		if v, ok := existing.Annotations[k]; ok && k != kubetypes.ConfigMirrorAnnotationKey {
			annotations[k] = v
		}
	}
	annotations[kubetypes.ConfigSourceAnnotationKey] = source
	stored.Annotations = annotations
	if stored.DeletionTimestamp != nil {
		return stored, kubetypes.DELETE, true
	}
	return stored, kubetypes.UPDATE, true
}

// localAnnotations are set by the agent (or, for the mirror annotation, by
// the agent on mirror pods) and do not make a pod different.
var localAnnotations = []string{
	kubetypes.ConfigSourceAnnotationKey,
	kubetypes.ConfigMirrorAnnotationKey,
	kubetypes.ConfigFirstSeenAnnotationKey,
}

func isLocalAnnotationKey(key string) bool {
	for _, k := range localAnnotations {
		if key == k {
			return true
		}
	}
	return false
}

// podsDifferSemantically is upstream's test of an UPDATE: spec, labels,
// deletion timestamp and grace period, and non-local annotations.
// Spec is compared through pointers: by value, it would be copied into an
// interface (an allocation of the whole PodSpec) on every comparison.
func podsDifferSemantically(existing, ref *v1.Pod) bool {
	return !reflect.DeepEqual(&existing.Spec, &ref.Spec) ||
		!reflect.DeepEqual(existing.Labels, ref.Labels) ||
		!reflect.DeepEqual(existing.DeletionTimestamp, ref.DeletionTimestamp) ||
		!reflect.DeepEqual(existing.DeletionGracePeriodSeconds, ref.DeletionGracePeriodSeconds) ||
		!annotationsEqual(existing.Annotations, ref.Annotations)
}

// annotationsEqual compares annotations except the local ones.
func annotationsEqual(a, b map[string]string) bool {
	for k, v := range b {
		if isLocalAnnotationKey(k) {
			continue
		}
		if av, ok := a[k]; !ok || av != v {
			return false
		}
	}
	for k := range a {
		if isLocalAnnotationKey(k) {
			continue
		}
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

func setAnnotation(pod *v1.Pod, key, value string) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[key] = value
}

func copyPods(pods []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p.DeepCopy()
	}
	return out
}

func sortedKeys(m map[string]*sourceState) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
