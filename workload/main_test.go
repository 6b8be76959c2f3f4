package workload_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/kite-project/kite"
)

// shared is the control plane the tests run the workloads against.
var shared *kite.Server

func TestMain(m *testing.M) {
	srv, err := kite.Start(context.Background(), kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start kite:", err)
		os.Exit(1)
	}
	shared = srv
	code := m.Run()
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close kite:", err)
		code = 1
	}
	// Keep-alive connections of client-go's transports end on their own
	// once the server is gone.
	if code == 0 {
		if err := goleak.Find(
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
