package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kite-project/kite"
)

func TestClusterDNSFlag(t *testing.T) {
	for _, tc := range []struct {
		name, addr, metrics, bind string
		want                      kite.ClusterDNSOptions
		err                       string
	}{
		{name: "none runs no DNS", addr: "none", metrics: "auto"},
		{name: "an address is required to serve", addr: "10.1.2.3:5353", metrics: "none", want: kite.ClusterDNSOptions{Addr: "10.1.2.3:5353", Domain: "example.local"}},
		{name: "auto on a bind address, metrics on its port 9153", addr: "auto", metrics: "auto", bind: "10.1.2.3",
			want: kite.ClusterDNSOptions{Addr: "10.1.2.3:10053", Domain: "example.local", Optional: true, MetricsAddr: "10.1.2.3:9153", MetricsOptional: true}},
		{name: "metrics where asked", addr: "10.1.2.3:5353", metrics: "127.0.0.1:9999", want: kite.ClusterDNSOptions{Addr: "10.1.2.3:5353", Domain: "example.local", MetricsAddr: "127.0.0.1:9999"}},
		{name: "not host:port", addr: "10.1.2.3", err: "--cluster-dns-addr"},
		{name: "metrics not host:port", addr: "10.1.2.3:53", metrics: "9153", err: "--cluster-dns-metrics-addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := clusterDNSFlags{addr: tc.addr, metricsAddr: tc.metrics}
			opts := kite.Options{BindAddress: tc.bind}
			err := f.apply(&opts, "example.local")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("apply = %v, want an error naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.addr == "auto" {
				// The port depends on who runs the test.
				opts.ClusterDNS.Addr = autoClusterDNSAddr(tc.bind, false)
			}
			if !reflect.DeepEqual(opts.ClusterDNS, tc.want) {
				t.Errorf("ClusterDNS = %+v, want %+v", opts.ClusterDNS, tc.want)
			}
		})
	}
	if got := autoClusterDNSAddr("10.1.2.3", true); got != "10.1.2.3:53" {
		t.Errorf("auto as root = %s, want 10.1.2.3:53", got)
	}
}

// The agent beside the server uses the kube-dns address of the server's
// range unless told another.
func TestAgentClusterDNSFollowsTheServiceRange(t *testing.T) {
	got, err := agentClusterDNS([]string{"10.43.0.10"}, kite.Options{ServiceClusterIPRanges: []string{"10.96.0.0/12"}})
	if err != nil || strings.Join(got, ",") != "10.96.0.10" {
		t.Errorf("default: %v %v, want 10.96.0.10", got, err)
	}
	got, _ = agentClusterDNS([]string{"10.0.0.53"}, kite.Options{ServiceClusterIPRanges: []string{"10.96.0.0/12"}})
	if strings.Join(got, ",") != "10.0.0.53" {
		t.Errorf("given: %v, want 10.0.0.53", got)
	}
}
