package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
)

// srv is the control plane the tests share, running the scheduler and
// nothing else that touches pods.
var srv *kite.Server

func TestMain(m *testing.M) {
	var err error
	srv, err = kite.Start(context.Background(), kite.Options{
		EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", Controllers: []string{controllers.Scheduler},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start kite:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close kite:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
