package workload_test

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

// shared is the control plane the tests run the workloads against.
var shared *kite.Server

func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { shared = s }) }
