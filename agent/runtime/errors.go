package runtime

import (
	"errors"

	"google.golang.org/grpc/status"
)

// ErrNotFound is wrapped by errors for a sandbox or container ID the
// runtime does not know.
var ErrNotFound = errors.New("not found")

// RuntimeError is the runtime's own error that err wraps: a CRI runtime's
// gRPC status error, as the kubelet's remote runtime hands it on, for the
// messages (events) the kubelet writes with it; err itself when it wraps
// none (the process runtime's errors, the agent's own).
func RuntimeError(err error) error {
	var s interface {
		error
		GRPCStatus() *status.Status
	}
	if errors.As(err, &s) {
		return s
	}
	return err
}
