package statefulset

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/kite-project/kite/controllers/controller"
)

// Patch is the part of the set a revision records (TemplatePatch).
func Patch(set *appsv1.StatefulSet) ([]byte, error) { return controller.TemplatePatch(set) }

// NewRevision is upstream's newRevision: the set's template as revision
// number revision, named <set>-<hash>, labelled with the template's labels
// and the hash, controlled by the set.
func NewRevision(set *appsv1.StatefulSet, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	patch, err := Patch(set)
	if err != nil {
		return nil, err
	}
	hash := controller.HashRevision(patch, collisionCount)
	labels := make(map[string]string, len(set.Spec.Template.Labels)+1)
	for k, v := range set.Spec.Template.Labels {
		labels[k] = v
	}
	labels[appsv1.ControllerRevisionHashLabelKey] = hash
	annotations := make(map[string]string, len(set.Annotations))
	for k, v := range set.Annotations {
		annotations[k] = v
	}
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: controller.RevisionName(set.Name, hash), Namespace: set.Namespace, Labels: labels, Annotations: annotations,
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
