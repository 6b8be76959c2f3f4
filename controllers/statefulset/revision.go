package statefulset

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Patch is upstream's getPatch: the part of a StatefulSet a
// ControllerRevision records, {"spec":{"template":{...,"$patch":"replace"}}}.
// kubectl rollout undo applies it to the set as a strategic merge patch.
func Patch(set *appsv1.StatefulSet) ([]byte, error) {
	data, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("statefulset %s/%s: %w", set.Namespace, set.Name, err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("statefulset %s/%s: %w", set.Namespace, set.Name, err)
	}
	spec, _ := raw["spec"].(map[string]any)
	template, _ := spec["template"].(map[string]any)
	if template == nil {
		template = map[string]any{}
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// HashRevision is upstream's history.HashControllerRevision: FNV-32 of
// the revision's data and the collision count, safely encoded.
func HashRevision(data []byte, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// NewRevision is upstream's newRevision: the set's template as revision
// number revision, named <set>-<hash>, labelled with the template's labels
// and the hash, controlled by the set.
func NewRevision(set *appsv1.StatefulSet, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	patch, err := Patch(set)
	if err != nil {
		return nil, err
	}
	hash := HashRevision(patch, collisionCount)
	labels := make(map[string]string, len(set.Spec.Template.Labels)+1)
	for k, v := range set.Spec.Template.Labels {
		labels[k] = v
	}
	labels[appsv1.ControllerRevisionHashLabelKey] = hash
	annotations := make(map[string]string, len(set.Annotations))
	for k, v := range set.Annotations {
		annotations[k] = v
	}
	prefix := set.Name
	if len(prefix) > 223 {
		prefix = prefix[:223]
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + hash, Namespace: set.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, kind)}},
		Data:     runtime.RawExtension{Raw: patch},
		Revision: revision,
	}, nil
}

// ApplyRevision is upstream's ApplyRevision: set with the revision's
// template.
func ApplyRevision(set *appsv1.StatefulSet, rev *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	orig, err := json.Marshal(set)
	if err != nil {
		return nil, err
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, rev.Data.Raw, &appsv1.StatefulSet{})
	if err != nil {
		return nil, fmt.Errorf("revision %s of statefulset %s/%s: %w", rev.Name, set.Namespace, set.Name, err)
	}
	out := &appsv1.StatefulSet{}
	if err := json.Unmarshal(patched, out); err != nil {
		return nil, fmt.Errorf("revision %s of statefulset %s/%s: %w", rev.Name, set.Namespace, set.Name, err)
	}
	return out, nil
}
