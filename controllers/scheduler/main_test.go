package scheduler_test

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

// srv is the control plane the tests share. It runs no controller: each
// test runs its own scheduler. A scheduler lists at resourceVersion 0, from
// the watch cache, so each test's clean-up waits until the cache no longer
// shows its nodes and pods: a later test's scheduler never sees them.
var srv *kite.Server

func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Controllers: []string{controllers.ServiceAccount}}, func(s *kite.Server) { srv = s })
}
