package scheduler_test

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

// srv is the control plane the tests share. It runs no controller: each
// test runs its own scheduler, which lists the nodes as they are when it
// starts, so a node an earlier test deleted is never in its cache.
var srv *kite.Server

func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Controllers: []string{}}, func(s *kite.Server) { srv = s })
}
