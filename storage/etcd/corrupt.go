package etcd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/value"
)

// Corrupt objects: values in etcd that do not transform (decrypt) or do
// not decode. Decode failures are always CorruptObj storage errors naming
// the key. Transformer failures are internal errors, unless the
// transformer says the value itself is bad by returning a
// *CorruptValueError (CorruptValueTransformer makes every failure one).
//
// With Options.UnsafeCorruptObjectDeletion (kube-apiserver's
// AllowUnsafeMalformedObjectDeletion), as upstream:
//   - Get reports a corrupt value as CorruptObj, so that the registry
//     may offer its unsafe deletion;
//   - Delete honours DeleteOptions.ExpectTransformOrDecodeError;
//   - GetList collects up to maxCorruptErrors corrupt values, returns the
//     good items with a StoreReadError status listing the bad keys, and
//     still aborts on the first error that is not about a corrupt value.

// maxCorruptErrors caps the corrupt values one list reports.
const maxCorruptErrors = 100

var errTooManyCorrupt = errors.New("too many errors, the list is truncated")

// CorruptValueError is a transformer's failure that means the stored value
// is bad (not, say, that a KMS was unreachable).
type CorruptValueError struct {
	Err error
}

func (e *CorruptValueError) Error() string {
	return fmt.Sprintf("data from the storage is not transformable: %v", e.Err)
}

func (e *CorruptValueError) Unwrap() error { return e.Err }

// CorruptValueTransformer wraps t so that each of its read failures is a
// *CorruptValueError.
func CorruptValueTransformer(t value.Transformer) value.Transformer {
	return corruptValueTransformer{t}
}

type corruptValueTransformer struct{ value.Transformer }

func (t corruptValueTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	out, stale, err := t.Transformer.TransformFromStorage(ctx, data, dataCtx)
	if err != nil {
		err = &CorruptValueError{Err: err}
	}
	return out, stale, err
}

// corruptObjError returns the CorruptObj storage error for err about the
// value at key, or nil if err is not about a corrupt value.
func corruptObjError(key string, err error) error {
	if storage.IsCorruptObject(err) {
		return err
	}
	var cv *CorruptValueError
	if errors.As(err, &cv) {
		return storage.NewCorruptObjError(key, cv)
	}
	return nil
}

// corruptDeletedError ends a watch that saw an object deleted whose last
// value is corrupt: the watcher cannot be told what was deleted.
type corruptDeletedError struct{ err error }

func (e *corruptDeletedError) Error() string {
	return fmt.Sprintf("saw a DELETED event, but object data is corrupt - %v", e.err)
}

func (e *corruptDeletedError) Unwrap() error { return e.err }

func (e *corruptDeletedError) Status() metav1.Status {
	return metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Reason:  metav1.StatusReasonStoreReadError,
		Message: e.Error(),
	}
}

// listErrors decides, per failed list item, whether the list goes on.
type listErrors struct {
	aggregate bool // collect corrupt values instead of aborting
	corrupt   []error
	abort     error
}

// add records err for key and reports whether the list must stop.
func (l *listErrors) add(key string, err error) (stop bool) {
	if l.aggregate {
		if c := corruptObjError(key, err); c != nil {
			l.corrupt = append(l.corrupt, c)
			if len(l.corrupt) >= maxCorruptErrors {
				l.abort = errTooManyCorrupt
				return true
			}
			return false
		}
	}
	l.abort = err
	return true
}

// err is the list's error: nil, the aborting error as is, or a status
// naming every corrupt key (and why the list stopped, if it did).
func (l *listErrors) err(gr schema.GroupResource) error {
	if len(l.corrupt) == 0 {
		return l.abort
	}
	causes := make([]metav1.StatusCause, 0, len(l.corrupt)+1)
	for _, err := range l.corrupt {
		var se *storage.StorageError
		if errors.As(err, &se) {
			causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Field: se.Key, Message: err.Error()})
		}
	}
	switch {
	case errors.Is(l.abort, errTooManyCorrupt):
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeTooMany, Message: errTooManyCorrupt.Error()})
	case l.abort != nil:
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Message: l.abort.Error()})
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "failed to read one or more %s from the storage: %v", gr.String(), l.corrupt[0])
	if len(l.corrupt) > 1 {
		fmt.Fprintf(&msg, " (and %d more)", len(l.corrupt)-1)
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Reason:  metav1.StatusReasonStoreReadError,
		Message: msg.String(),
		Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: "list", Causes: causes},
	}}
}
