package listwatch

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// isExpired reports a resourceVersion compacted away: 410 Expired, or Gone
// from servers before Kubernetes 1.18.
func isExpired(err error) bool {
	return err != nil && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err))
}

// isTooLargeResourceVersion reports a resourceVersion the server has not
// reached yet (504 with cause ResourceVersionTooLarge, or the message older
// servers used), as client-go does.
func isTooLargeResourceVersion(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
		return true
	}
	if !apierrors.IsTimeout(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Message == "Too large resource version" {
				return true
			}
		}
	}
	return strings.Contains(s.Message, "Too large resource version")
}
