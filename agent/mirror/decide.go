package mirror

import (
	"maps"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kite-project/kite/agent/kubetypes"
)

// Input is what one decision is made from.
type Input struct {
	// Static are the static pods the agent runs, as the merge sent them
	// (with their kubernetes.io/config.hash annotation).
	Static []*v1.Pod
	// Mirrors are this node's mirror pods in the API server, as the api
	// source last reported them.
	Mirrors []*v1.Pod
	// APISeen says the api source has reported, so Mirrors is the API's
	// state. Before that nothing is decided: a mirror not reported yet
	// may well exist.
	APISeen bool
	// StaticSeen says every static source has reported, so a mirror
	// without a static pod is an orphan. Before that orphans are kept.
	StaticSeen bool
}

// Op is an API call.
type Op int

const (
	// Create a mirror pod for Action.Pod, a static pod.
	Create Op = iota
	// Delete Action.Pod, a mirror pod, with grace period 0 and its UID as
	// precondition.
	Delete
)

func (o Op) String() string {
	if o == Create {
		return "create"
	}
	return "delete"
}

// Reasons of actions, for logs.
const (
	ReasonMissing     = "missing"     // the static pod has no mirror
	ReasonTerminating = "terminating" // the mirror was deleted through the API
	ReasonOutdated    = "outdated"    // the mirror's hash is not the static pod's
	ReasonOrphaned    = "orphaned"    // the mirror's static pod is gone
)

// Action is one call to make.
type Action struct {
	Op Op
	// Pod is the static pod to mirror (Create) or the mirror pod to delete
	// (Delete).
	Pod    *v1.Pod
	Reason string
}

// Decide returns the calls that make the API's mirror pods match the
// static pods, by pod full name (name and namespace), in name order; for
// one name, a Delete comes before its Create. It reads its input only.
func Decide(in Input) []Action {
	if !in.APISeen {
		return nil
	}
	static := make(map[string]*v1.Pod, len(in.Static))
	for _, p := range in.Static {
		static[kubetypes.PodFullName(p)] = p
	}
	mirrors := make(map[string]*v1.Pod, len(in.Mirrors))
	for _, p := range in.Mirrors {
		mirrors[kubetypes.PodFullName(p)] = p
	}
	names := make([]string, 0, len(static)+len(mirrors))
	for name := range static {
		names = append(names, name)
	}
	for name := range mirrors {
		if _, ok := static[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)

	var actions []Action
	for _, name := range names {
		s, m := static[name], mirrors[name]
		switch {
		case s == nil:
			if in.StaticSeen {
				actions = append(actions, Action{Op: Delete, Pod: m, Reason: ReasonOrphaned})
			}
		case m == nil:
			actions = append(actions, Action{Op: Create, Pod: s, Reason: ReasonMissing})
		case m.DeletionTimestamp != nil:
			actions = append(actions,
				Action{Op: Delete, Pod: m, Reason: ReasonTerminating},
				Action{Op: Create, Pod: s, Reason: ReasonTerminating})
		case !IsMirrorOf(m, s):
			actions = append(actions,
				Action{Op: Delete, Pod: m, Reason: ReasonOutdated},
				Action{Op: Create, Pod: s, Reason: ReasonOutdated})
		}
	}
	return actions
}

// Hash is a static pod's config hash: its kubernetes.io/config.hash
// annotation, which the sources set to its UID.
func Hash(static *v1.Pod) string {
	if h, ok := static.Annotations[kubetypes.ConfigHashAnnotationKey]; ok {
		return h
	}
	return string(static.UID)
}

// IsMirrorOf says whether mirror stands for static's current content:
// same full name and its mirror annotation equal to static's hash. The
// spec is not compared, as upstream (IsMirrorPodOf): hand edits of a
// mirror are ignored, and so are fields an API server of another version
// defaults differently.
func IsMirrorOf(mirror, static *v1.Pod) bool {
	if kubetypes.PodFullName(mirror) != kubetypes.PodFullName(static) {
		return false
	}
	h, ok := mirror.Annotations[kubetypes.ConfigMirrorAnnotationKey]
	return ok && h == Hash(static)
}

// NewMirrorPod returns the mirror pod to create for static on node
// nodeName whose Node object has nodeUID: static's name, namespace,
// labels, annotations and spec, plus the mirror annotation and the Node as
// controller owner. Status, UID and the like are left to the API server.
func NewMirrorPod(static *v1.Pod, nodeName string, nodeUID types.UID) *v1.Pod {
	annotations := maps.Clone(static.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[kubetypes.ConfigMirrorAnnotationKey] = Hash(static)
	controller := true
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        static.Name,
			Namespace:   static.Namespace,
			Labels:      maps.Clone(static.Labels),
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1.SchemeGroupVersion.String(),
				Kind:       "Node",
				Name:       nodeName,
				UID:        nodeUID,
				Controller: &controller,
			}},
		},
		Spec: *static.Spec.DeepCopy(),
	}
}
