package registry

import (
	"context"
	"errors"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/ptr"
)

// Delete deletes one object, or marks it for deletion when the strategy
// wants a grace period or the object has finalizers. It returns the
// object (as deleted, or as marked) and whether it is gone.
func (s *Store) Delete(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	// Upstream's delete handler runs mutating admission first, with no
	// objects; validating admission sees the object that is to go.
	if err := s.admitMutating(ctx, s.admissionAttributes(ctx, admission.Delete, nil, nil, namespace, name, "", opts, isDryRun(opts.DryRun))); err != nil {
		return nil, false, err
	}
	return s.delete(ctx, namespace, name, opts)
}

// delete is Delete after mutating admission.
func (s *Store) delete(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		// Upstream: a negative grace period is 1 s on the delete path.
		opts = opts.DeepCopy()
		opts.GracePeriodSeconds = ptr.To[int64](1)
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
	if err := s.admitValidating(ctx, s.admissionAttributes(ctx, admission.Delete, nil, existing, namespace, name, "", opts, isDryRun(opts.DryRun))); err != nil {
		return nil, false, err
	}
	m, err := meta.Accessor(existing)
	if err != nil {
		return nil, false, apierrors.NewInternalError(err)
	}
	// From here on, delete only the object that passed the checks, not
	// one recreated under the same name meanwhile.
	uid := m.GetUID()
	preconditions.UID = &uid

	marked := existing.DeepCopyObject()
	plan, err := s.planDelete(marked, opts)
	if err != nil {
		return nil, false, err
	}
	cached := existing
	switch {
	case plan == deletePending:
		return existing, false, nil
	case plan == deleteMark && isDryRun(opts.DryRun):
		return marked, false, nil
	case plan == deleteMark:
		out, err := s.markDeleted(ctx, key, existing, preconditions, opts)
		if err != nil || out != nil {
			return out, false, err
		}
		// The object changed meanwhile and is now to go at once.
		cached = nil
	case isDryRun(opts.DryRun):
		return existing, true, nil
	}
	out := s.strategy.New()
	if err := s.storage.Delete(ctx, key, out, preconditions, noValidation, cached, storage.DeleteOptions{}); err != nil {
		return nil, false, s.interpret(err, name)
	}
	s.released(ctx, out)
	return out, true, nil
}

// deletion is what a DELETE does to an object.
type deletion int

const (
	// deleteNow removes the object from storage.
	deleteNow deletion = iota
	// deleteMark writes the object marked for deletion (deletionTimestamp,
	// deletionGracePeriodSeconds, finalizers) and keeps it: a grace period
	// runs or finalizers remain.
	deleteMark
	// deletePending leaves the object as it is: it is being deleted
	// already, no later than this delete asks.
	deletePending
)

// planDelete decides what a DELETE with opts does to obj and, for
// deleteMark, marks obj: upstream's rest.BeforeDelete and the marking of
// Store.updateForGracefulDeletionAndFinalizers. It runs once on the object
// read first, and again on the current object inside the write.
func (s *Store) planDelete(obj runtime.Object, opts *metav1.DeleteOptions) (deletion, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return deleteNow, apierrors.NewInternalError(err)
	}
	if s.strategy.MarkForDeletion != nil {
		mark, err := s.strategy.MarkForDeletion(obj, opts)
		if err != nil {
			return deleteNow, err
		}
		if mark != nil {
			// The garbage collector's finalizers go on with the mark, as
			// upstream's updateForGracefulDeletionAndFinalizers.
			if finalizers, changed := s.gcFinalizers(m, opts); changed {
				m.SetFinalizers(finalizers)
			}
			mark(obj)
			return deleteMark, nil
		}
	}
	graceful, pending := s.beforeDelete(obj, m, opts)
	if pending {
		// As upstream, the finalizers do not change either once a
		// graceful deletion runs.
		return deletePending, nil
	}
	if finalizers, changed := s.gcFinalizers(m, opts); changed {
		m.SetFinalizers(finalizers)
	}
	switch {
	case len(m.GetFinalizers()) > 0:
		if !graceful {
			s.markAsDeleting(m)
		}
		// A grace period, even one of 0, is written with the finalizers:
		// an update that removes the last of them then deletes the
		// object (Store.Update).
		return deleteMark, nil
	case graceful && *m.GetDeletionGracePeriodSeconds() > 0:
		return deleteMark, nil
	default:
		return deleteNow, nil
	}
}

// beforeDelete is upstream's rest.BeforeDelete for the resources with a
// grace period (Strategy.GracePeriod): the first delete sets
// deletionTimestamp to now plus the grace period; a later one may only
// shorten it, to 0 too (the kubelet's final delete of a pod that
// finalizers keep), moving deletionTimestamp back by the difference but
// not into the past. It reports whether it marked m (graceful), or
// whether the deletion already under way is no later than asked
// (pending). An object already at grace 0 is neither: it goes now, or
// waits for its finalizers.
func (s *Store) beforeDelete(obj runtime.Object, m metav1.Object, opts *metav1.DeleteOptions) (graceful, pending bool) {
	if s.strategy.GracePeriod == nil {
		return false, false
	}
	current := m.GetDeletionGracePeriodSeconds()
	if current != nil && *current < 0 {
		current = ptr.To[int64](1)
		m.SetDeletionGracePeriodSeconds(current)
	}
	if at := m.GetDeletionTimestamp(); at != nil {
		switch {
		case current == nil || *current == 0:
			return false, false
		case opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds >= *current:
			return false, true
		}
		period := *opts.GracePeriodSeconds
		next := at.Add(time.Duration(period-*current) * time.Second)
		if now := s.now(); next.Before(now) {
			next = now
			if period != 0 {
				// The whole grace period has run out, but a graceful
				// delete was asked for: the shortest one, so that its
				// owner (the kubelet) still does the final delete.
				period = 1
			}
		}
		m.SetDeletionTimestamp(&metav1.Time{Time: next})
		m.SetDeletionGracePeriodSeconds(&period)
		return true, false
	}
	grace := s.strategy.GracePeriod(obj, opts)
	at := metav1.NewTime(s.now().Add(time.Duration(grace) * time.Second))
	m.SetDeletionTimestamp(&at)
	m.SetDeletionGracePeriodSeconds(&grace)
	// Controllers of an object being deleted must stop acting on it: its
	// first deletion is a new generation.
	if g := m.GetGeneration(); g > 0 {
		m.SetGeneration(g + 1)
	}
	return true, false
}

// markAsDeleting is upstream's deletion of an object that finalizers keep
// and that has no grace period to run: deletionTimestamp now (or sooner
// than a later one it has), grace 0, and it stays until the finalizers
// are removed.
func (s *Store) markAsDeleting(m metav1.Object) {
	now := s.now()
	at := m.GetDeletionTimestamp()
	if at == nil && m.GetGeneration() > 0 {
		m.SetGeneration(m.GetGeneration() + 1)
	}
	if at == nil || at.After(now) {
		m.SetDeletionTimestamp(&metav1.Time{Time: now})
	}
	m.SetDeletionGracePeriodSeconds(ptr.To[int64](0))
}

// errDeleteNow ends a marking write whose current object is to be deleted
// at once instead (its finalizers were removed meanwhile).
var errDeleteNow = errors.New("registry: delete now")

// markDeleted writes the marks planDelete makes on the current object and
// leaves it in place. It returns nil, and no error, when the current
// object is to be deleted at once instead.
func (s *Store) markDeleted(ctx context.Context, key string, existing runtime.Object, preconditions *storage.Preconditions, opts *metav1.DeleteOptions) (runtime.Object, error) {
	out := s.strategy.New()
	err := s.storage.GuaranteedUpdate(ctx, key, out, false, preconditions, func(current runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
		plan, err := s.planDelete(current, opts)
		switch {
		case err != nil:
			return nil, nil, err
		case plan == deleteNow:
			return nil, nil, errDeleteNow
		}
		// A pending deletion leaves current as it is, and an unchanged
		// object is not written (storage compares bytes).
		return current, nil, nil
	}, existing)
	switch {
	case errors.Is(err, errDeleteNow):
		return nil, nil
	case err != nil:
		return nil, s.interpret(err, keyName(key))
	}
	return out, nil
}

// DeleteCollection deletes every object of a namespace ("" = all) that
// matches listOpts, one by one as upstream does (not atomically), and
// returns the list of objects it deleted or marked.
func (s *Store) DeleteCollection(ctx context.Context, namespace string, listOpts *metainternalversion.ListOptions, opts *metav1.DeleteOptions) (runtime.Object, error) {
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	// As upstream's deletecollection handler: mutating admission once
	// for the collection (no name), validating admission per object.
	if err := s.admitMutating(ctx, s.admissionAttributes(ctx, admission.Delete, nil, nil, namespace, "", "", opts, isDryRun(opts.DryRun))); err != nil {
		return nil, err
	}
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
		uid := types.UID(m.GetUID())
		itemOpts.Preconditions = &metav1.Preconditions{UID: &uid}
		out, _, err := s.delete(ctx, m.GetNamespace(), m.GetName(), itemOpts)
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
