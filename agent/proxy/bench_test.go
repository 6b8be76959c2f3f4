package proxy

import (
	"net/netip"
	"testing"
)

// BenchmarkRules1000ServicesX10Endpoints is the decision and the script
// for 1 000 NodePort Services of 10 ready endpoints each (test/proxy
// applies it too).
func BenchmarkRules1000ServicesX10Endpoints(b *testing.B) {
	svcs, eps := Fixture(1000, 10)
	cfg := Config{NodeName: "n", NodePortIPs: []netip.Addr{netip.MustParseAddr("192.168.0.2")}, LocalCIDRs: []netip.Prefix{netip.MustParsePrefix("10.42.0.0/16")}}
	var size int
	for b.Loop() {
		size = len(Render(Rules(svcs, eps, cfg)))
	}
	b.ReportMetric(float64(size), "script-bytes")
}
