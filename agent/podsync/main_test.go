package podsync

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/agent/runtime/process"
	"github.com/kite-project/kite/kitetest"
)

var shared *kite.Server

// TestMain lets the test binary serve as the process runtime's supervisor
// (process.Main returns at once in the test process itself), then shares
// one Kite among the tests.
func TestMain(m *testing.M) {
	process.Main()
	kitetest.Main(m, func(s *kite.Server) { shared = s })
}
