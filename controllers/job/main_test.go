package job_test

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

var srv *kite.Server

// TestMain runs a control plane with the garbage collector, which carries
// out the foreground deletion of a Job past its TTL.
func TestMain(m *testing.M) {
	opts := kite.Options{Controllers: []string{controllers.Namespace, controllers.ServiceAccount, controllers.GarbageCollector}}
	kitetest.MainWith(m, opts, func(s *kite.Server) { srv = s })
}
