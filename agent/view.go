package agent

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kite-project/kite/agent/kubetypes"
)

// view follows the merge's operations to know, at every moment, the
// static pods the agent runs and the mirror pods the API server has: what
// the mirror reconciler decides from. Only the forwarding goroutine uses
// it.
type view struct {
	static  map[types.UID]*v1.Pod
	mirrors map[types.UID]*v1.Pod
}

func newView() *view {
	return &view{static: map[types.UID]*v1.Pod{}, mirrors: map[types.UID]*v1.Pod{}}
}

// apply records u and says whether the static or mirror pods changed.
// ADD, UPDATE, DELETE and RECONCILE carry a pod's latest version, REMOVE
// its end.
func (v *view) apply(u kubetypes.PodUpdate) bool {
	changed := false
	for _, p := range u.Pods {
		var m map[types.UID]*v1.Pod
		switch {
		case u.Source == kubetypes.FileSource || u.Source == kubetypes.HTTPSource:
			m = v.static
		case u.Source == kubetypes.APISource && (kubetypes.IsMirrorPod(p) || v.mirrors[p.UID] != nil):
			m = v.mirrors
		default:
			continue
		}
		changed = true
		if u.Op == kubetypes.REMOVE {
			delete(m, p.UID)
		} else {
			m[p.UID] = p
		}
	}
	return changed
}

func (v *view) staticPods() []*v1.Pod { return sorted(v.static) }
func (v *view) mirrorPods() []*v1.Pod { return sorted(v.mirrors) }

// sorted lists m's pods by namespace and name, so that decisions and logs
// come in a stable order.
func sorted(m map[types.UID]*v1.Pod) []*v1.Pod {
	pods := make([]*v1.Pod, 0, len(m))
	for _, p := range m {
		pods = append(pods, p)
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	return pods
}
