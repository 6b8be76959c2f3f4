package etcd

import (
	"errors"

	etcdrpc "go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
)

// The messages of upstream's etcd3 store, which clients and tests match.
const (
	msgListExpired     = "The resourceVersion for the provided list is too old."
	msgWatchExpired    = "The resourceVersion for the provided watch is too old."
	msgContinueExpired = "The provided continue parameter is too old " +
		"to display a consistent list result. You can start a new list without " +
		"the continue parameter."
	msgInconsistentContinue = "The provided continue parameter is too old " +
		"to display a consistent list result. You can start a new list without " +
		"the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided " +
		"token results in an inconsistent list - objects that were created, " +
		"modified, or deleted between the time the first chunk was returned " +
		"and now may show up in the list."
)

// interpretListError makes a compacted revision Expired (410). For a
// continued list the error carries a new continue token at revision -1:
// the client may continue from the same key at the latest revision,
// knowing the result is then inconsistent.
func interpretListError(err error, continuing bool, continueKey, keyPrefix string) error {
	if !errors.Is(err, etcdrpc.ErrCompacted) {
		return err
	}
	if !continuing {
		return apierrors.NewResourceExpired(msgListExpired)
	}
	token, encErr := storage.EncodeContinue(continueKey, keyPrefix, -1)
	if encErr != nil {
		klog.Errorf("etcd store: encode continue token for %q: %v", continueKey, encErr)
		return apierrors.NewResourceExpired(msgContinueExpired)
	}
	status := apierrors.NewResourceExpired(msgInconsistentContinue)
	status.ErrStatus.ListMeta.Continue = token
	return status
}

// interpretWatchError makes a compacted revision Expired (410).
func interpretWatchError(err error) error {
	if errors.Is(err, etcdrpc.ErrCompacted) {
		return apierrors.NewResourceExpired(msgWatchExpired)
	}
	return err
}
