package garbagecollector

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestDecide(t *testing.T) {
	ref := func(uid string, block bool) metav1.OwnerReference {
		return metav1.OwnerReference{UID: types.UID(uid), BlockOwnerDeletion: ptr.To(block)}
	}
	tests := []struct {
		name          string
		owners        []metav1.OwnerReference
		states        map[types.UID]ownerState
		hasDependents bool
		finalizers    []string
		want          action
	}{
		{"a present owner keeps it", []metav1.OwnerReference{ref("a", true)}, map[types.UID]ownerState{"a": ownerPresent}, false, nil,
			action{keep: true}},
		{"absent owner: deleted in the background", []metav1.OwnerReference{ref("a", true)}, map[types.UID]ownerState{"a": ownerAbsent}, false, nil,
			action{delete: true, propagation: metav1.DeletePropagationBackground}},
		{"one present owner of two: the absent reference goes", []metav1.OwnerReference{ref("a", false), ref("b", false)},
			map[types.UID]ownerState{"a": ownerAbsent, "b": ownerPresent}, false, nil, action{removeRefs: []types.UID{"a"}}},
		{"waiting owner, a leaf: background", []metav1.OwnerReference{ref("a", true)}, map[types.UID]ownerState{"a": ownerWaiting}, false, nil,
			action{delete: true, propagation: metav1.DeletePropagationBackground}},
		{"waiting owner, with dependents: foreground, unblocking the waiting owner", []metav1.OwnerReference{ref("a", true), ref("b", false)},
			map[types.UID]ownerState{"a": ownerWaiting, "b": ownerAbsent}, true, nil,
			action{unblockRefs: []types.UID{"a"}, delete: true, propagation: metav1.DeletePropagationForeground}},
		{"waiting owner beside a present one: the waiting reference goes", []metav1.OwnerReference{ref("a", true), ref("b", false)},
			map[types.UID]ownerState{"a": ownerWaiting, "b": ownerPresent}, true, nil, action{removeRefs: []types.UID{"a"}}},
		{"its own orphan finalizer is kept in the delete", []metav1.OwnerReference{ref("a", true)}, map[types.UID]ownerState{"a": ownerAbsent}, true,
			[]string{metav1.FinalizerOrphanDependents}, action{delete: true, propagation: metav1.DeletePropagationOrphan}},
		{"its own foreground finalizer is kept in the delete", []metav1.OwnerReference{ref("a", true)}, map[types.UID]ownerState{"a": ownerAbsent}, true,
			[]string{metav1.FinalizerDeleteDependents}, action{delete: true, propagation: metav1.DeletePropagationForeground}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := decide(tc.owners, tc.states, tc.hasDependents, tc.finalizers)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(action{})); diff != "" {
				t.Errorf("decide (-want +got):\n%s", diff)
			}
		})
	}
}
