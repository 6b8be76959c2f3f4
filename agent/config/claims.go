package config

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kite-project/kite/agent/kubetypes"
)

// Kinds of refusal, the prefix of a refusal key.
const (
	duplicateRefusal = "duplicate"
	claimRefusal     = "claim"
)

// refusalKey identifies one refused pod version, so that its refusal is
// reported once while it lasts.
func refusalKey(kind string, pod *v1.Pod) string {
	return kind + "/" + kubetypes.PodFullName(pod) + "/" + string(pod.UID)
}

// dedupe drops the pods of one snapshot whose full name or UID repeats an
// earlier pod of the same snapshot: the first wins, as upstream's
// filterInvalidPods. It returns the pods kept, the refusal keys of the pods
// dropped, and a problem for each drop not already in reported.
func dedupe(source string, pods []*v1.Pod, reported map[string]bool) ([]*v1.Pod, map[string]bool, []kubetypes.Problem) {
	kept := make([]*v1.Pod, 0, len(pods))
	refused := map[string]bool{}
	var problems []kubetypes.Problem
	names := make(map[string]*v1.Pod, len(pods))
	uids := make(map[types.UID]*v1.Pod, len(pods))
	for _, pod := range pods {
		first := names[kubetypes.PodFullName(pod)]
		if first == nil {
			first = uids[pod.UID]
		}
		if first == nil {
			names[kubetypes.PodFullName(pod)] = pod
			uids[pod.UID] = pod
			kept = append(kept, pod)
			continue
		}
		key := refusalKey(duplicateRefusal, pod)
		refused[key] = true
		if !reported[key] {
			problems = append(problems, kubetypes.Problem{Source: source, Reason: kubetypes.ReasonDuplicatePod,
				Err: fmt.Errorf("pod %s/%s (uid %s) duplicates pod %s/%s (uid %s) of the same update, ignored",
					pod.Namespace, pod.Name, pod.UID, first.Namespace, first.Name, first.UID)})
		}
	}
	return kept, refused, problems
}

// duplicateRefusals returns the refusal keys of dedupe from refused.
func duplicateRefusals(refused map[string]bool) map[string]bool {
	out := map[string]bool{}
	for key := range refused {
		if strings.HasPrefix(key, duplicateRefusal+"/") {
			out[key] = true
		}
	}
	return out
}

// hasClaimRefusals says whether some pod of the source was refused because
// another source claimed its name.
func hasClaimRefusals(ss *sourceState) bool {
	for key := range ss.refused {
		if strings.HasPrefix(key, claimRefusal+"/") {
			return true
		}
	}
	return false
}

// claims are what the accepted pods of some sources hold: their full names
// and their UIDs, each to the source that has it. A UID is as exclusive as
// a name: the consumer keys pods by UID, so a second pod of one UID (static
// pods may set metadata.uid) would be the first one's pod to it, and a
// REMOVE of either would stop both.
type claims struct {
	names map[string]string
	uids  map[types.UID]string
}

// owner returns the source that holds pod's full name or UID, if any.
func (c claims) owner(pod *v1.Pod) (source, what string, taken bool) {
	if source, taken := c.names[kubetypes.PodFullName(pod)]; taken {
		return source, "name", true
	}
	if source, taken := c.uids[pod.UID]; taken {
		return source, "uid", true
	}
	return "", "", false
}

// claimsExcept returns the claims of every accepted pod of the sources
// other than source. Mirror pods claim nothing: they stand for a static pod
// of another source.
func claimsExcept(st State, source string) claims {
	c := claims{names: map[string]string{}, uids: map[types.UID]string{}}
	for name, ss := range st.sources {
		if name == source {
			continue
		}
		for _, pod := range ss.accepted {
			if !kubetypes.IsMirrorPod(pod) {
				c.names[kubetypes.PodFullName(pod)] = name
				c.uids[pod.UID] = name
			}
		}
	}
	return c
}

// upsert returns pods with each of changes replacing the pod of its UID, or
// appended when new.
func upsert(pods, changes []*v1.Pod) []*v1.Pod {
	out := append([]*v1.Pod(nil), pods...)
	index := make(map[types.UID]int, len(out))
	for i, p := range out {
		index[p.UID] = i
	}
	for _, c := range changes {
		if i, ok := index[c.UID]; ok {
			out[i] = c
			continue
		}
		index[c.UID] = len(out)
		out = append(out, c)
	}
	return out
}

// without returns pods less those whose UID is among gone.
func without(pods, gone []*v1.Pod) []*v1.Pod {
	drop := make(map[types.UID]bool, len(gone))
	for _, g := range gone {
		drop[g.UID] = true
	}
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		if !drop[p.UID] {
			out = append(out, p)
		}
	}
	return out
}
