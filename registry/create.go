package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/warning"
)

// maxGenerateNameAttempts is how often a create with generateName retries
// after picking a name that exists (upstream: 8).
const maxGenerateNameAttempts = 8

// Create stores a new object in namespace ("" for cluster-scoped
// resources) and returns it as stored. With opts.DryRun it returns what
// would be stored and writes nothing.
func (s *Store) Create(ctx context.Context, namespace string, obj runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
	if s.strategy.Virtual != nil {
		return s.strategy.Virtual(ctx, obj)
	}
	if s.strategy.CreateVia != "" {
		return s.createVia(ctx, namespace, obj, opts)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("object has no metadata: %v", err))
	}
	if err := s.checkNamespace(m, namespace); err != nil {
		return nil, err
	}
	if err := s.admitCreate(m.GetName()); err != nil {
		return nil, err
	}
	if err := s.pruneUnknown(ctx, obj, opts.FieldValidation); err != nil {
		return nil, err
	}
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	if err := s.prepareCreate(ctx, obj, m, opts, false); err != nil {
		return nil, err
	}
	if err := s.authorizeWrite(ctx, obj, nil); err != nil {
		return nil, err
	}
	if isDryRun(opts.DryRun) {
		finish, err := s.allocate(ctx, obj, nil, true)
		if err != nil {
			return nil, err
		}
		finish(false)
		// As upstream's dry-run storage: an existing object is still a
		// conflict, so a dry run predicts the real create.
		if err := s.storage.Get(ctx, s.ObjectKey(m.GetNamespace(), m.GetName()), storage.GetOptions{}, s.strategy.New()); err == nil {
			return nil, s.alreadyExists(ctx, m.GetNamespace(), m.GetName())
		}
		return obj, nil
	}
	finish, err := s.allocate(ctx, obj, nil, false)
	if err != nil {
		return nil, err
	}
	var ttl uint64
	if s.strategy.TTL != nil {
		ttl = s.strategy.TTL(obj)
	}
	for attempt := 1; ; attempt++ {
		if generated && attempt > 1 {
			m.SetName(generateName(m.GetGenerateName()))
			// Allocated again under the new name (an IPAddress names
			// its Service).
			if finish, err = s.allocate(ctx, obj, nil, false); err != nil {
				return nil, err
			}
		}
		out := s.strategy.New()
		err := s.storage.Create(ctx, s.ObjectKey(m.GetNamespace(), m.GetName()), obj, out, ttl)
		if err == nil {
			finish(true)
			return out, nil
		}
		finish(false)
		if generated && storage.IsExist(err) && attempt < maxGenerateNameAttempts {
			continue
		}
		if storage.IsExist(err) {
			return nil, s.alreadyExists(ctx, m.GetNamespace(), m.GetName())
		}
		return nil, s.interpret(err, m.GetName())
	}
}

// CreateSubresource is POST on a subresource (pods/binding): admission
// sees the body as the create of the subresource, as upstream's, then the
// subresource's Create runs it.
func (s *Store) CreateSubresource(ctx context.Context, namespace, name, subresource string, body runtime.Object, opts *metav1.CreateOptions) (runtime.Object, error) {
	return s.createSubresource(ctx, namespace, name, subresource, body, opts, true)
}

// createSubresource is CreateSubresource, with the subresource's
// admission only when admit (an alias such as core bindings runs its own:
// createVia).
func (s *Store) createSubresource(ctx context.Context, namespace, name, subresource string, body runtime.Object, opts *metav1.CreateOptions, admit bool) (runtime.Object, error) {
	sub := s.strategy.Subresources[subresource]
	if sub == nil || sub.Create == nil {
		return nil, apierrors.NewNotFound(s.strategy.GroupResource(), name)
	}
	if admit && s.admission != nil {
		a := s.admissionAttributes(ctx, admission.Create, body, nil, namespace, name, subresource, opts, isDryRun(opts.DryRun))
		if err := s.admitMutating(ctx, a); err != nil {
			return nil, err
		}
		if err := s.admitValidating(ctx, a); err != nil {
			return nil, err
		}
	}
	return sub.Create(ctx, s, namespace, name, body, opts)
}

// alreadyExists is upstream's 409: it says "object is being deleted" when
// the existing object has a deletionTimestamp, so a client recreating a
// pod that is still terminating knows why.
func (s *Store) alreadyExists(ctx context.Context, namespace, name string) error {
	exists := apierrors.NewAlreadyExists(s.strategy.GroupResource(), name)
	if existing, err := s.Get(ctx, namespace, name, &metav1.GetOptions{}); err == nil {
		if em, err := meta.Accessor(existing); err == nil && em.GetDeletionTimestamp() != nil {
			exists.ErrStatus.Message = "object is being deleted: " + exists.ErrStatus.Message
		}
	}
	return exists
}

// checkNamespace makes the object's namespace agree with the request's.
func (s *Store) checkNamespace(m metav1.Object, namespace string) error {
	if !s.strategy.Namespaced {
		m.SetNamespace("")
		return nil
	}
	switch {
	case m.GetNamespace() == "":
		m.SetNamespace(namespace)
	case namespace != "" && m.GetNamespace() != namespace:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if m.GetNamespace() == "" {
		return apierrors.NewBadRequest("the namespace of the object is required")
	}
	return nil
}

// prepareCreate does what upstream's create handler and rest.BeforeCreate
// do, in their order: defaults, mutating admission, defaults again (of
// what admission added), system fields, the strategy's PrepareForCreate,
// validation, managed fields, validating admission.
func (s *Store) prepareCreate(ctx context.Context, obj runtime.Object, m metav1.Object, opts *metav1.CreateOptions, applied bool) error {
	if s.strategy.Default != nil {
		s.strategy.Default(obj)
	}
	dryRun := isDryRun(opts.DryRun)
	if s.admission != nil {
		a := s.admissionAttributes(ctx, admission.Create, obj, nil, m.GetNamespace(), m.GetName(), "", opts, dryRun)
		if err := s.admitMutating(ctx, a); err != nil {
			return err
		}
		if s.strategy.Default != nil {
			s.strategy.Default(obj)
		}
	}
	m.SetUID(types.UID(uuid.NewUUID()))
	m.SetCreationTimestamp(metav1.NewTime(s.now().Truncate(1e9)))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	// The name is generated before PrepareForCreate, as upstream's Store
	// does since RetryGenerateName: a Job's labels carry its name.
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(generateName(m.GetGenerateName()))
	}
	if s.strategy.PrepareForCreate != nil {
		s.strategy.PrepareForCreate(obj)
	}
	if s.strategy.PrepareForCreateFromRequest != nil {
		s.strategy.PrepareForCreateFromRequest(ctx, obj)
	}
	var errs field.ErrorList
	if !s.strategy.ValidatesMetadata {
		errs = apivalidation.ValidateObjectMetaAccessor(m, s.strategy.Namespaced, s.validateName(), field.NewPath("metadata"))
	}
	if s.strategy.Validate != nil {
		errs = append(errs, s.strategy.Validate(obj)...)
	}
	if len(errs) > 0 {
		name := m.GetName()
		if name == "" {
			name = m.GetGenerateName()
		}
		return s.newInvalid(name, errs)
	}
	if fm := s.FieldManager(""); fm != nil && !applied {
		withFields := fm.UpdateNoErrors(s.strategy.New(), obj, managerName(opts.FieldManager))
		if wm, err := meta.Accessor(withFields); err == nil {
			m.SetManagedFields(wm.GetManagedFields())
		}
	}
	return s.admitValidating(ctx, s.admissionAttributes(ctx, admission.Create, obj, nil, m.GetNamespace(), m.GetName(), "", opts, dryRun))
}

func generateName(base string) string {
	// Upstream: at most 63-5 characters of the base, then 5 random ones.
	const maxBase = 58
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	return base + utilrand.String(5)
}

func managerName(manager string) string {
	if manager == "" {
		return "unknown"
	}
	return manager
}

func isDryRun(dryRun []string) bool { return len(dryRun) > 0 }

// admitCreate refuses creates while the resource terminates.
func (s *Store) admitCreate(name string) error {
	if s.strategy.Terminating != nil && s.strategy.Terminating() {
		return apierrors.NewForbidden(s.strategy.GroupResource(), name, errors.New("create not allowed while custom resource definition is terminating"))
	}
	return nil
}

// pruneUnknown drops undeclared fields (Strategy.PruneUnknown) and
// answers them as fieldValidation says, with upstream's texts: Strict is
// a 400, Warn (the default) a warning per field, Ignore nothing.
func (s *Store) pruneUnknown(ctx context.Context, obj runtime.Object, fieldValidation string) error {
	if s.strategy.PruneUnknown == nil {
		return nil
	}
	unknown := s.strategy.PruneUnknown(obj)
	if len(unknown) == 0 || fieldValidation == metav1.FieldValidationIgnore {
		return nil
	}
	texts := make([]string, len(unknown))
	for i, path := range unknown {
		texts[i] = fmt.Sprintf("unknown field %q", path)
	}
	if fieldValidation == metav1.FieldValidationStrict {
		kind := s.strategy.Kind
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s", kind.Kind, kind.Version, kind.Kind, strings.Join(texts, ", ")))
	}
	for _, t := range texts {
		warning.AddWarning(ctx, "", t)
	}
	return nil
}

// allocate runs the strategy's Allocate, if any; the finish it returns is
// never nil.
func (s *Store) allocate(ctx context.Context, obj, old runtime.Object, dryRun bool) (func(bool), error) {
	if s.strategy.Allocate == nil {
		return func(bool) {}, nil
	}
	finish, err := s.strategy.Allocate(ctx, obj, old, dryRun)
	if err != nil {
		return nil, err
	}
	if finish == nil {
		finish = func(bool) {}
	}
	return finish, nil
}

// released gives back what a deleted object held (Strategy.Release).
func (s *Store) released(ctx context.Context, obj runtime.Object) {
	if s.strategy.Release != nil {
		s.strategy.Release(ctx, obj)
	}
}

// authorizeWrite runs the strategy's AuthorizeWrite, if any.
func (s *Store) authorizeWrite(ctx context.Context, obj, old runtime.Object) error {
	if s.strategy.AuthorizeWrite == nil {
		return nil
	}
	return s.strategy.AuthorizeWrite(ctx, obj, old)
}
