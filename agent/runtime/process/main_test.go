package process

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain lets the test binary serve as the runtime's supervisor and
// container init (Main returns at once in the test process itself).
func TestMain(m *testing.M) {
	Main()
	goleak.VerifyTestMain(m)
}
