package registry

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage"
)

// OptimisticLockErrorMsg is upstream's message for an update that lost a
// race on resourceVersion; clients (kubectl, retry.RetryOnConflict) show it.
const OptimisticLockErrorMsg = "the object has been modified; please apply your changes to the latest version and try again"

// interpret turns a storage error into the API status error a client of
// kube-apiserver would get for it (upstream: storage/errors/storage.go).
// Errors that already carry a status pass through.
func (s *Store) interpret(err error, name string) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	gr := s.strategy.GroupResource()
	var serr *storage.StorageError
	if errors.As(err, &serr) && name == "" {
		// The storage knows the key; the last segment is the name.
		name = keyName(serr.Key)
	}
	switch {
	case storage.IsNotFound(err):
		return apierrors.NewNotFound(gr, name)
	case storage.IsExist(err):
		return apierrors.NewAlreadyExists(gr, name)
	case storage.IsConflict(err):
		return apierrors.NewConflict(gr, name, errors.New(OptimisticLockErrorMsg))
	case storage.IsInvalidObj(err):
		// A failed precondition (UID or resourceVersion).
		return apierrors.NewConflict(gr, name, err)
	case storage.IsUnreachable(err):
		return apierrors.NewServerTimeout(gr, "get", 2)
	case storage.IsRequestTimeout(err):
		return apierrors.NewTimeoutError(err.Error(), 0)
	case storage.IsInvalidError(err):
		var ierr storage.InvalidError
		if errors.As(err, &ierr) {
			return apierrors.NewBadRequest(ierr.Errs.ToAggregate().Error())
		}
		return apierrors.NewBadRequest(err.Error())
	case storage.IsCorruptObject(err):
		return apierrors.NewInternalError(err)
	}
	return apierrors.NewInternalError(err)
}

func keyName(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[i+1:]
		}
	}
	return key
}

// newInvalid is the 422 Invalid error for an object that failed validation.
func (s *Store) newInvalid(name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(s.strategy.Kind.GroupKind(), name, errs)
}
