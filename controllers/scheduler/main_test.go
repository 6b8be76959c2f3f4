package scheduler_test

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

// srv is the control plane the tests share, running the scheduler and
// nothing else that touches pods.
var srv *kite.Server

func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Controllers: []string{controllers.Scheduler}}, func(s *kite.Server) { srv = s })
}
