// Package api_test tests Kite's HTTP API as clients see it (client-go,
// kubectl, raw HTTP), against one shared server (kitetest.Main); the few
// tests that need a server of their own (options, restarts, the resource
// set changed while serving) start one with kite.Start.
package api_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

// shared is the one control plane every test of this package talks to:
// starting one per test would cost the two cores more than the tests.
var shared *kite.Server

// TestMain starts it with the embedded default's controllers but the root
// CA publisher: that one writes kube-root-ca.crt into every new namespace
// at a time of its own, and these tests list and watch the configMaps of
// their namespaces and count their own. It has its tests in
// controllers/rootcacertpublisher.
func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Profiling: true, Controllers: []string{controllers.Namespace, controllers.ServiceAccount}},
		func(s *kite.Server) { shared = s })
}

// config returns a client config for the shared server.
func config(t testing.TB) *rest.Config {
	t.Helper()
	return shared.RESTConfig()
}

func contextWithTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}
