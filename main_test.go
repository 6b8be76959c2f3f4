package kite_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
)

// shared is the one control plane every test of this package talks to:
// starting one per test would cost the two cores more than the tests.
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
	// Close must leave no goroutine behind. Keep-alive connections of
	// client-go's transports end on their own once the server is gone.
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

// config returns a client config for the shared server.
func config(t testing.TB) *rest.Config {
	t.Helper()
	return shared.RESTConfig()
}

func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}
