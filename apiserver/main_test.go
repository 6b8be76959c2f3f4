package apiserver_test

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

// shared is the control plane that the request fuzz targets send to: one
// per test binary (each fuzz worker is one), as kitetest.Main starts it.
var shared *kite.Server

func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { shared = s }) }
