package run

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/kite-project/kite"
)

// shared is the API server most tests of this package talk to, each on a
// node of its own: one server per test would cost the machine more than
// the tests.
var shared *kite.Server

func TestMain(m *testing.M) {
	srv, err := kite.Start(context.Background(), kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start kite:", err)
		os.Exit(1)
	}
	shared = srv
	code := m.Run()
	// The server's goroutines end with Close, so look for leaks after it.
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close kite:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(
			// Connections kept alive by client-go's shared transports end
			// on their own after the server closed them.
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
