package agent

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

// shared is the API server most tests of this package talk to, each on a
// node (or namespace) of its own.
var shared *kite.Server

func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { shared = s }) }
