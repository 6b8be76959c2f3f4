// Package kitetest gives a package's tests one shared Kite: started before
// the tests (embedded etcd, fsync off, free ports), closed after them, and
// then checked for leaked goroutines. One server per package rather than
// per test keeps the suite within what two cores can run.
package kitetest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/kite-project/kite"
)

// Main is a TestMain: it starts a Kite, hands it to use (which keeps it
// for the tests), runs the tests, closes the server and exits. The run
// fails if the server cannot start or close, or if a goroutine outlives it.
func Main(m *testing.M, use func(*kite.Server)) {
	MainWith(m, kite.Options{Profiling: true}, use)
}

// MainWith is Main with a Kite started from opts (embedded etcd without
// fsync is always set), e.g. to name the controllers it runs.
func MainWith(m *testing.M, opts kite.Options, use func(*kite.Server)) {
	opts.EtcdUnsafeNoFsync, opts.EtcdLogLevel = true, "fatal"
	srv, err := kite.Start(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start kite:", err)
		os.Exit(1)
	}
	use(srv)
	code := m.Run()
	// The server's goroutines end with Close, so look for leaks after it.
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close kite:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(
			// Keep-alive connections of client-go's shared transports end
			// on their own once the server has closed them.
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
