// Package apicoverage_test holds Kite's served API against kube-apiserver
// 1.37.2's: discovery compared with upstream's recorded documents
// (testdata/discovery-1.37.2), and the kinds that no other part of the
// tree serves (issue 26) created, refused, printed and applied as
// upstream does, against one shared server without custom resources.
package apicoverage_test

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers"
	"github.com/kite-project/kite/kitetest"
)

// shared is the one control plane every test of this package talks to. It
// runs no controllers: discovery and the objects' rules are the subject.
var shared *kite.Server

func TestMain(m *testing.M) {
	kitetest.MainWith(m, kite.Options{Controllers: []string{controllers.ServiceAccount}}, func(s *kite.Server) { shared = s })
}

// config returns a client config for the shared server.
func config(t testing.TB) *rest.Config {
	t.Helper()
	return shared.RESTConfig()
}
