// Package proxy tests the agent's service proxy (agent/proxy) against a
// real Kite and real nftables, in network namespaces the tests make: a
// "node" namespace where the proxy's rules go, joined by veth pairs to
// backend namespaces where servers listen. Nothing is done in the
// machine's own namespace. The tests need root, ip (iproute2) and nft;
// without them they skip, unless KITE_REQUIRE_CRI is set (as in CI), where
// they fail.
package proxy

import (
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/kitetest"
)

var srv *kite.Server

func TestMain(m *testing.M) {
	kitetest.Main(m, func(s *kite.Server) { srv = s })
}
