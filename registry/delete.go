package registry

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/storage"
)

// Delete deletes one object, or marks it for deletion when the strategy
// wants a grace period or the object has finalizers. It returns the
// object (as deleted, or as marked) and whether it is gone.
func (s *Store) Delete(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	key := s.ObjectKey(namespace, name)
	existing := s.strategy.New()
	if err := s.storage.Get(ctx, key, storage.GetOptions{}, existing); err != nil {
		return nil, false, s.interpret(err, name)
	}
	preconditions := &storage.Preconditions{}
	if p := opts.Preconditions; p != nil {
		preconditions.UID, preconditions.ResourceVersion = p.UID, p.ResourceVersion
	}
	if err := preconditions.Check(key, existing); err != nil {
		return nil, false, s.interpret(err, name)
	}
	m, err := meta.Accessor(existing)
	if err != nil {
		return nil, false, apierrors.NewInternalError(err)
	}
	// From here on, delete only the object that passed the checks, not
	// one recreated under the same name meanwhile.
	uid := m.GetUID()
	preconditions.UID = &uid

	var mark func(runtime.Object) bool
	if s.strategy.Graceful != nil {
		if mark, err = s.strategy.Graceful(existing, opts); err != nil {
			return nil, false, err
		}
	}
	finalizers, changed := s.gcFinalizers(m, opts)
	if mark == nil && len(finalizers) > 0 {
		mark = s.markForFinalizers
	}
	if changed && mark != nil {
		// The garbage collector's finalizers go on with the mark, as
		// upstream's updateForGracefulDeletionAndFinalizers.
		inner := mark
		mark = func(obj runtime.Object) bool {
			om, err := meta.Accessor(obj)
			if err != nil {
				return false
			}
			om.SetFinalizers(finalizers)
			inner(obj)
			return true
		}
	}
	if mark != nil {
		return s.markDeleted(ctx, key, existing, preconditions, mark, opts)
	}
	if isDryRun(opts.DryRun) {
		return existing, true, nil
	}
	out := s.strategy.New()
	if err := s.storage.Delete(ctx, key, out, preconditions, noValidation, existing, storage.DeleteOptions{}); err != nil {
		return nil, false, s.interpret(err, name)
	}
	return out, true, nil
}

// markDeleted writes what mark changes (deletionTimestamp and friends) and
// leaves the object in place.
func (s *Store) markDeleted(ctx context.Context, key string, existing runtime.Object, preconditions *storage.Preconditions, mark func(runtime.Object) bool, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	name := keyName(key)
	if isDryRun(opts.DryRun) {
		mark(existing)
		return existing, false, nil
	}
	out := s.strategy.New()
	err := s.storage.GuaranteedUpdate(ctx, key, out, false, preconditions, func(current runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
		// An unchanged object is not written (storage compares bytes).
		mark(current)
		return current, nil, nil
	}, existing)
	if err != nil {
		return nil, false, s.interpret(err, name)
	}
	return out, false, nil
}

// markForFinalizers is upstream's deletion of an object with finalizers:
// deletionTimestamp now, grace 0, and it stays until the finalizers are
// removed.
func (s *Store) markForFinalizers(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetDeletionTimestamp() != nil {
		return false
	}
	now := metav1.NewTime(s.now())
	zero := int64(0)
	m.SetDeletionTimestamp(&now)
	m.SetDeletionGracePeriodSeconds(&zero)
	return true
}

// DeleteCollection deletes every object of a namespace ("" = all) that
// matches listOpts, one by one as upstream does (not atomically), and
// returns the list of objects it deleted or marked.
func (s *Store) DeleteCollection(ctx context.Context, namespace string, listOpts *metainternalversion.ListOptions, opts *metav1.DeleteOptions) (runtime.Object, error) {
	listObj, err := s.List(ctx, namespace, listOpts)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(listObj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	done := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		itemOpts := opts.DeepCopy()
		if itemOpts == nil {
			itemOpts = &metav1.DeleteOptions{}
		}
		uid := types.UID(m.GetUID())
		itemOpts.Preconditions = &metav1.Preconditions{UID: &uid}
		out, _, err := s.Delete(ctx, m.GetNamespace(), m.GetName(), itemOpts)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // deleted or replaced meanwhile
		}
		if err != nil {
			return nil, err
		}
		done = append(done, out)
	}
	result := s.strategy.NewList()
	if err := meta.SetList(result, done); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return result, nil
}

// noValidation is the storage.ValidateObjectFunc of deletes whose checks
// were done before: storage calls it on the object it is about to delete.
func noValidation(context.Context, runtime.Object) error { return nil }

// gcFinalizers returns the finalizers obj should have once deleted with
// opts, and whether they differ from its own: upstream's
// deletionFinalizersForGarbageCollection. The orphan finalizer asks the
// garbage collector to orphan the dependents first, foregroundDeletion to
// delete those that block their owner's deletion first.
func (s *Store) gcFinalizers(m metav1.Object, opts *metav1.DeleteOptions) ([]string, bool) {
	orphan, foreground := false, false
	has := func(f string) bool { return slices.Contains(m.GetFinalizers(), f) }
	switch {
	case opts.OrphanDependents != nil:
		orphan = *opts.OrphanDependents
	case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationOrphan:
		orphan = true
	case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationForeground:
		foreground = true
	case opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationBackground:
	case has(metav1.FinalizerOrphanDependents):
		orphan = true
	case has(metav1.FinalizerDeleteDependents):
		foreground = true
	default:
		orphan = s.strategy.DefaultPropagation == metav1.DeletePropagationOrphan
	}
	var out []string
	for _, f := range m.GetFinalizers() {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	old := slices.Sorted(slices.Values(m.GetFinalizers()))
	return out, !slices.Equal(old, slices.Sorted(slices.Values(out)))
}
