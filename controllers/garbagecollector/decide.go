package garbagecollector

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ownerState is what a live look-up found of one owner reference.
type ownerState int

const (
	// ownerPresent: the owner exists with the referenced uid.
	ownerPresent ownerState = iota
	// ownerAbsent: no object of that name, or one with another uid, or
	// a namespaced owner named from a cluster-scoped dependent.
	ownerAbsent
	// ownerWaiting: the owner is being deleted in the foreground and
	// waits for its dependents.
	ownerWaiting
)

// action is what the collector does to one dependent.
type action struct {
	// keep: nothing to do (some owner is present and no reference needs
	// removing).
	keep bool
	// removeRefs are owner uids to drop from the dependent's references
	// (absent or waiting owners, while another owner keeps it alive).
	removeRefs []types.UID
	// unblockRefs are owner uids whose references lose
	// blockOwnerDeletion before the dependent is deleted, so an owner
	// and a dependent that wait for each other never deadlock.
	unblockRefs []types.UID
	// delete the dependent with propagation.
	delete      bool
	propagation metav1.DeletionPropagation
}

// decide is upstream's attemptToDeleteItem: given the state of each
// owner of a dependent (by uid), whether the dependent has dependents of
// its own, and its finalizers, what to do with it.
func decide(owners []metav1.OwnerReference, states map[types.UID]ownerState, hasDependents bool, finalizers []string) action {
	var solid, dangling, waiting []types.UID
	for _, o := range owners {
		switch states[o.UID] {
		case ownerPresent:
			solid = append(solid, o.UID)
		case ownerAbsent:
			dangling = append(dangling, o.UID)
		case ownerWaiting:
			waiting = append(waiting, o.UID)
		}
	}
	switch {
	case len(solid) > 0:
		if len(dangling)+len(waiting) == 0 {
			return action{keep: true}
		}
		return action{removeRefs: append(dangling, waiting...)}
	case len(waiting) > 0 && hasDependents:
		// Its own dependents will block it: delete it in the foreground
		// too, but first stop it from blocking the owners that wait.
		var unblock []types.UID
		for _, o := range owners {
			if o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion && slices.Contains(waiting, o.UID) {
				unblock = append(unblock, o.UID)
			}
		}
		return action{unblockRefs: unblock, delete: true, propagation: metav1.DeletePropagationForeground}
	}
	policy := metav1.DeletePropagationBackground
	switch {
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		policy = metav1.DeletePropagationOrphan
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	}
	return action{delete: true, propagation: policy}
}

// blocking says whether a dependent holds up the foreground deletion of
// owner: it still references it with blockOwnerDeletion.
func blocking(refs []metav1.OwnerReference, owner types.UID) bool {
	for _, r := range refs {
		if r.UID == owner && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion {
			return true
		}
	}
	return false
}
