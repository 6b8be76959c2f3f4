package runtime

import "errors"

// ErrNotFound is wrapped by errors for a sandbox or container ID the
// runtime does not know.
var ErrNotFound = errors.New("not found")
