package nodelifecycle_test

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

// srv is the shared control plane; it runs no controller that touches
// nodes or pods: each test runs its own, with short periods.
var srv *kite.Server

func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { srv = s }) }
