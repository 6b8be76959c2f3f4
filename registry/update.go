package registry

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/storage"
)

// UpdateRequest is one PUT or PATCH of an object or of its subresource.
type UpdateRequest struct {
	Namespace   string
	Name        string
	Subresource string // "" for the object itself, else "status", "finalize", ...
	// Object computes the desired object from a copy of the existing one
	// (nil when there is none and the resource allows create on update).
	// It is called again with the newer object when the update races with
	// another writer, so a patch is re-applied rather than lost.
	Object func(ctx context.Context, existing runtime.Object) (runtime.Object, error)
	// Applied says Object computed managed fields itself (server-side
	// apply); otherwise the Store records the update in managedFields.
	Applied bool
	// ForceAllowCreate lets this update create a missing object even when
	// the resource does not allow create on update (server-side apply).
	ForceAllowCreate bool
	// Admitted says the request went through admission already (the
	// POST of a subresource that updates its object: pods/binding), so
	// the update does not run it again.
	Admitted bool
	// Options are the request's update options (dryRun, fieldManager).
	Options metav1.UpdateOptions
}

// Update changes one object and returns it as stored, and whether it was
// created. It retries on conflicts with other writers by calling
// req.Object again; a client-supplied resourceVersion that does not match
// the stored one is a 409 Conflict.
func (s *Store) Update(ctx context.Context, req *UpdateRequest) (runtime.Object, bool, error) {
	sub, err := s.subresource(req.Subresource)
	if err != nil {
		return nil, false, err
	}
	createOnUpdate := (s.strategy.AllowCreateOnUpdate || req.ForceAllowCreate) && sub == nil
	key := s.ObjectKey(req.Namespace, req.Name)
	created, deleteAfter := false, false
	// finish settles the allocation (Strategy.Allocate) of the last
	// attempt; an attempt that is retried gives its allocation back.
	var finish func(ok bool)
	settle := func(ok bool) {
		if finish != nil {
			finish(ok)
			finish = nil
		}
	}
	attempt := func(existing runtime.Object) (runtime.Object, error) {
		rv, err := s.storage.Versioner().ObjectResourceVersion(existing)
		if err != nil {
			return nil, err
		}
		if rv == 0 {
			if !createOnUpdate {
				return nil, apierrors.NewNotFound(s.strategy.GroupResource(), req.Name)
			}
			obj, err := s.createOnUpdate(ctx, req)
			created = err == nil
			return obj, err
		}
		created = false
		obj, err := s.updated(ctx, req, sub, existing)
		if err != nil {
			return nil, err
		}
		if err := s.pruneUnknown(ctx, obj, req.Options.FieldValidation); err != nil {
			return nil, err
		}
		obj, err = s.prepareUpdate(ctx, obj, existing, req, sub)
		if err == nil && sub == nil {
			err = s.authorizeWrite(ctx, obj, existing)
		}
		deleteAfter = err == nil && s.shouldDeleteDuringUpdate(obj, existing)
		return obj, err
	}
	tryUpdate := func(existing runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
		settle(false)
		obj, err := attempt(existing)
		if err != nil || sub != nil {
			return obj, nil, err
		}
		var old runtime.Object
		if !created {
			old = existing
		}
		finish, err = s.allocate(ctx, obj, old, isDryRun(req.Options.DryRun))
		return obj, nil, err
	}

	if isDryRun(req.Options.DryRun) {
		existing := s.strategy.New()
		err := s.storage.Get(ctx, key, storage.GetOptions{IgnoreNotFound: createOnUpdate}, existing)
		if err != nil {
			return nil, false, s.interpret(err, req.Name)
		}
		obj, _, err := tryUpdate(existing, storage.ResponseMeta{})
		settle(false)
		if err != nil {
			return nil, false, s.interpret(err, req.Name)
		}
		return viewOf(sub, obj, created)
	}

	out := s.strategy.New()
	err = s.storage.GuaranteedUpdate(ctx, key, out, createOnUpdate, nil, tryUpdate, nil)
	settle(err == nil)
	if err != nil {
		return nil, false, s.interpret(err, req.Name)
	}
	if deleteAfter {
		// The last finalizer of an object being deleted is gone: the
		// object goes now, as upstream's deleteWithoutFinalizers does.
		deleted := s.strategy.New()
		m, _ := meta.Accessor(out)
		uid := m.GetUID()
		rv := m.GetResourceVersion()
		err := s.storage.Delete(ctx, key, deleted, &storage.Preconditions{UID: &uid, ResourceVersion: &rv}, noValidation, out, storage.DeleteOptions{})
		if err != nil && !storage.IsNotFound(err) {
			return nil, false, s.interpret(err, req.Name)
		}
		if err == nil {
			s.released(ctx, deleted)
		}
	}
	return viewOf(sub, out, created)
}

// updated computes the object an update writes: req.Object of the
// existing object or, for a view subresource, of its view, applied back.
func (s *Store) updated(ctx context.Context, req *UpdateRequest, sub *Subresource, existing runtime.Object) (runtime.Object, error) {
	if sub == nil || sub.View == nil {
		return req.Object(ctx, existing.DeepCopyObject())
	}
	viewOf := sub.View
	if sub.ViewForUpdate != nil {
		viewOf = sub.ViewForUpdate
	}
	view, err := viewOf(existing.DeepCopyObject())
	if err != nil {
		return nil, err
	}
	fields, err := s.viewFields(sub, req.Subresource, existing, view)
	if err != nil {
		return nil, err
	}
	next, err := req.Object(ctx, view)
	if err != nil {
		return nil, err
	}
	if fields == nil {
		return sub.Apply(existing.DeepCopyObject(), next)
	}
	if !req.Applied {
		next = fields.manager.UpdateNoErrors(view, next, managerName(req.Options.FieldManager))
	}
	m, err := meta.Accessor(next)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s has no metadata: %v", req.Subresource, err))
	}
	viewEntries := m.GetManagedFields()
	obj, err := sub.Apply(existing.DeepCopyObject(), next)
	if err != nil {
		return nil, err
	}
	entries, err := fields.handler.ToParent(viewEntries)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("managed fields of %s to %s: %w", req.Subresource, s.strategy.Resource, err))
	}
	if om, err := meta.Accessor(obj); err == nil {
		om.SetManagedFields(entries)
	}
	return obj, nil
}

// viewManagedFields converts managed fields between a parent and its
// Scale view during one update.
type viewManagedFields struct {
	manager *managedfields.FieldManager
	handler *managedfields.ScaleHandler
}

// viewFields gives view the managed fields of existing that concern it
// (the owners of replicas) and returns what converts them back, or nil
// when the view's managed fields are not tracked.
func (s *Store) viewFields(sub *Subresource, name string, existing, view runtime.Object) (*viewManagedFields, error) {
	fm := s.FieldManager(name)
	if fm == nil {
		return nil, nil
	}
	parent, err := meta.Accessor(existing)
	if err != nil {
		return nil, err
	}
	h := managedfields.NewScaleHandler(parent.GetManagedFields(), s.strategy.Kind.GroupVersion(), sub.ReplicasPaths)
	entries, err := h.ToSubresource()
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("managed fields of %s to %s: %w", s.strategy.Resource, name, err))
	}
	vm, err := meta.Accessor(view)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("%s has no metadata: %w", name, err))
	}
	vm.SetManagedFields(entries)
	return &viewManagedFields{manager: fm, handler: h}, nil
}

// viewOf returns what an update of sub answers: the object, or its view.
func viewOf(sub *Subresource, obj runtime.Object, created bool) (runtime.Object, bool, error) {
	if sub == nil || sub.View == nil {
		return obj, created, nil
	}
	view, err := sub.View(obj)
	return view, created, err
}

func (s *Store) createOnUpdate(ctx context.Context, req *UpdateRequest) (runtime.Object, error) {
	obj, err := req.Object(ctx, nil)
	if err != nil {
		return nil, err
	}
	if err := s.pruneUnknown(ctx, obj, req.Options.FieldValidation); err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("object has no metadata: %v", err))
	}
	if err := s.checkName(m, req.Name); err != nil {
		return nil, err
	}
	if err := s.checkNamespace(m, req.Namespace); err != nil {
		return nil, err
	}
	if err := s.admitCreate(m.GetName()); err != nil {
		return nil, err
	}
	m.SetResourceVersion("")
	if err := s.prepareCreate(ctx, obj, m, updateToCreateOptions(&req.Options), req.Applied); err != nil {
		return nil, err
	}
	if err := s.authorizeWrite(ctx, obj, nil); err != nil {
		return nil, err
	}
	return obj, nil
}

// updateToCreateOptions is upstream's: the create options of an update
// that creates, as admission sees them.
func updateToCreateOptions(o *metav1.UpdateOptions) *metav1.CreateOptions {
	return &metav1.CreateOptions{DryRun: o.DryRun, FieldManager: o.FieldManager, FieldValidation: o.FieldValidation}
}

// prepareUpdate does what upstream's update handler and rest.BeforeUpdate
// do, in their order: the checks of the request, defaults, mutating
// admission, defaults again, what no update may change, the strategy's
// (or subresource's) PrepareForUpdate, validation, managed fields,
// validating admission.
func (s *Store) prepareUpdate(ctx context.Context, obj, existing runtime.Object, req *UpdateRequest, sub *Subresource) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("object has no metadata: %v", err))
	}
	old, err := meta.Accessor(existing)
	if err != nil {
		return nil, err
	}
	if err := s.checkName(m, req.Name); err != nil {
		return nil, err
	}
	if err := s.checkNamespace(m, req.Namespace); err != nil {
		return nil, err
	}
	switch rv := m.GetResourceVersion(); {
	case rv == "" && !s.strategy.AllowUnconditionalUpdate:
		return nil, s.newInvalid(req.Name, field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), rv, "must be specified for an update")})
	case rv == "":
		m.SetResourceVersion(old.GetResourceVersion())
	case rv != old.GetResourceVersion():
		return nil, apierrors.NewConflict(s.strategy.GroupResource(), req.Name, fmt.Errorf("%s", OptimisticLockErrorMsg))
	}
	if s.strategy.Default != nil {
		s.strategy.Default(obj)
	}
	if s.admission != nil && !req.Admitted {
		mutated, err := s.admitUpdate(ctx, obj, existing, req, sub, true)
		if err != nil {
			return nil, err
		}
		if obj = mutated; s.strategy.Default != nil {
			s.strategy.Default(obj)
		}
		if m, err = meta.Accessor(obj); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("object has no metadata: %v", err))
		}
	}
	// What no update may change.
	if m.GetUID() == "" {
		m.SetUID(old.GetUID())
	}
	m.SetCreationTimestamp(old.GetCreationTimestamp())
	m.SetDeletionTimestamp(old.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	m.SetGeneration(old.GetGeneration())
	m.SetSelfLink("")

	validate := s.strategy.ValidateUpdate
	isView := sub != nil && sub.View != nil
	if isView {
		// A view's write (scale) is an update of the object itself; its
		// managed fields came with it (Store.updated).
		sub = nil
	}
	if sub != nil {
		if sub.PrepareForUpdate != nil {
			sub.PrepareForUpdate(obj, existing)
		}
		if sub.ValidateUpdate != nil {
			validate = sub.ValidateUpdate
		}
	} else if s.strategy.PrepareForUpdate != nil {
		s.strategy.PrepareForUpdate(obj, existing)
	}
	var errs field.ErrorList
	if !s.strategy.ValidatesMetadata {
		errs = apivalidation.ValidateObjectMetaAccessor(m, s.strategy.Namespaced, s.validateName(), field.NewPath("metadata"))
		errs = append(errs, apivalidation.ValidateObjectMetaAccessorUpdate(m, old, field.NewPath("metadata"))...)
	}
	if validate != nil {
		errs = append(errs, validate(obj, existing)...)
	}
	if len(errs) > 0 {
		return nil, s.newInvalid(req.Name, errs)
	}
	if !req.Applied && !isView {
		if fm := s.FieldManager(req.Subresource); fm != nil {
			withFields := fm.UpdateNoErrors(existing, obj, managerName(req.Options.FieldManager))
			if wm, err := meta.Accessor(withFields); err == nil {
				m.SetManagedFields(wm.GetManagedFields())
			}
		}
	}
	keepManagedFieldsOnNoop(m, old, obj, existing)
	if s.admission != nil && !req.Admitted {
		if _, err := s.admitUpdate(ctx, obj, existing, req, isViewOf(s.strategy.Subresources[req.Subresource]), false); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// isViewOf returns sub when it is a view (Scale), else nil.
func isViewOf(sub *Subresource) *Subresource {
	if sub != nil && sub.View != nil {
		return sub
	}
	return nil
}

// admitUpdate runs mutating (mutate) or validating admission on the
// update of existing to obj and returns the object, as mutating admission
// left it. A view subresource (Scale) is admitted as its view, as
// upstream's, and what mutating admission changed in the view is applied
// back to the object.
func (s *Store) admitUpdate(ctx context.Context, obj, existing runtime.Object, req *UpdateRequest, sub *Subresource, mutate bool) (runtime.Object, error) {
	admitted, old := obj, existing
	view := sub != nil && sub.View != nil
	if view {
		// The lenient view where there is one: a custom resource's
		// Scale may be written while its replicas are not set.
		viewOf := sub.View
		if sub.ViewForUpdate != nil {
			viewOf = sub.ViewForUpdate
		}
		var err error
		if admitted, err = viewOf(obj); err != nil {
			return nil, err
		}
		if old, err = viewOf(existing); err != nil {
			return nil, err
		}
	}
	a := s.admissionAttributes(ctx, admission.Update, admitted, old, req.Namespace, req.Name, req.Subresource, &req.Options, isDryRun(req.Options.DryRun))
	if !mutate {
		return obj, s.admitValidating(ctx, a)
	}
	if err := s.admitMutating(ctx, a); err != nil {
		return nil, err
	}
	if !view {
		return obj, nil
	}
	return sub.Apply(obj, admitted)
}

// keepManagedFieldsOnNoop restores the old managedFields when nothing else
// changed and they differ only in timestamps: recording an update moves
// its timestamps, which would turn a no-op PUT into a write and a watch
// event. As upstream's IgnoreManagedFieldsTimestampsTransformer, a change
// of ownership alone (an apply of values already there by a new manager)
// is still written.
func keepManagedFieldsOnNoop(m, old metav1.Object, obj, existing runtime.Object) {
	newFields, oldFields := m.GetManagedFields(), old.GetManagedFields()
	if !sameIgnoringTimes(newFields, oldFields) {
		return
	}
	m.SetManagedFields(oldFields)
	if !apiequality.Semantic.DeepEqual(obj, existing) {
		m.SetManagedFields(newFields)
	}
}

func sameIgnoringTimes(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		x.Time, y.Time = nil, nil
		if !apiequality.Semantic.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

func (s *Store) checkName(m metav1.Object, name string) error {
	if m.GetName() == "" {
		m.SetName(name)
	}
	if m.GetName() != name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name))
	}
	return nil
}

func (s *Store) subresource(name string) (*Subresource, error) {
	if name == "" {
		return nil, nil
	}
	sub, ok := s.strategy.Subresources[name]
	if !ok {
		return nil, apierrors.NewNotFound(s.strategy.GroupResource(), name)
	}
	return sub, nil
}

// shouldDeleteDuringUpdate is upstream's ShouldDeleteDuringUpdate: an
// update leaves obj without finalizers while existing is being deleted
// with no grace period left (0, or none: deleted for its finalizers
// alone), so the object goes now. Grace 0 comes with finalizers from the
// first delete that has nothing to wait for, or from a later one that
// shortens a graceful deletion (the kubelet's final delete of a pod).
func (s *Store) shouldDeleteDuringUpdate(obj, existing runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil || len(m.GetFinalizers()) > 0 {
		return false
	}
	old, err := meta.Accessor(existing)
	if err != nil || old.GetDeletionTimestamp() == nil {
		return false
	}
	if grace := old.GetDeletionGracePeriodSeconds(); grace != nil && *grace != 0 {
		return false
	}
	return s.strategy.ShouldDeleteDuringUpdate == nil || s.strategy.ShouldDeleteDuringUpdate(obj)
}
