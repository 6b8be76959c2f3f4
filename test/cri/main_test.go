// Package cri runs pods from images through containerd and the whole
// agent (sources, pod workers, status, events, the streaming server behind
// the API server's proxy): the CRI runtime end to end. One Kite and one
// containerd (critest) serve the package; each test runs its own agent
// on a node of its own.
package cri

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"testing"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
	"github.com/kite-project/kite/controllers"
)

var shared *kite.Server

// clusterCIDR is the shared server's pod range: the node IPAM controller
// gives each test's node a /24 of it. It is not the default 10.42.0.0/16,
// so that a Kite running on the same host keeps its own.
var clusterCIDR = netip.MustParsePrefix("10.239.0.0/16")

func TestMain(m *testing.M) {
	srv, err := kite.Start(context.Background(), kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal",
		Controllers: append(controllers.EmbeddedDefault(), controllers.NodeIPAM, controllers.EndpointSlice), ClusterCIDRs: []string{clusterCIDR.String()}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start kite:", err)
		os.Exit(1)
	}
	shared = srv
	code := critest.Main(m)
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close kite:", err)
		code = 1
	}
	os.Exit(code)
}
