package servicealloc

import (
	"errors"
	"net/netip"
	"testing"
)

func TestIPRangeAllocatesAsUpstream(t *testing.T) {
	tests := []struct {
		name string
		cidr string
		// steps run in order: "a IP" allocate, "r IP" release, "n"
		// allocate next; want is the error text ("" none).
		steps []step
		// wantUsed is how many addresses are taken at the end.
		wantUsed uint64
	}{
		{name: "a given IP is taken once", cidr: "10.43.0.0/16", steps: []step{
			{op: "a", ip: "10.43.0.10"},
			{op: "a", ip: "10.43.0.10", want: "provided IP is already allocated"},
		}, wantUsed: 1},
		{name: "an IP outside the range is refused with the range", cidr: "10.43.0.0/16", steps: []step{
			{op: "a", ip: "10.0.0.1", want: "the provided IP (10.0.0.1) is not in the valid range. The range of valid IPs is 10.43.0.0/16"},
		}},
		{name: "the network and broadcast addresses are not in the range", cidr: "10.43.0.0/24", steps: []step{
			{op: "a", ip: "10.43.0.0", want: "the provided IP (10.43.0.0) is not in the valid range. The range of valid IPs is 10.43.0.0/24"},
			{op: "a", ip: "10.43.0.255", want: "the provided IP (10.43.0.255) is not in the valid range. The range of valid IPs is 10.43.0.0/24"},
			{op: "a", ip: "10.43.0.254"},
		}, wantUsed: 1},
		{name: "IPv6 has no broadcast address", cidr: "fd00:43::/112", steps: []step{
			{op: "a", ip: "fd00:43::ffff"},
			{op: "a", ip: "fd00:43::", want: "the provided IP (fd00:43::) is not in the valid range. The range of valid IPs is fd00:43::/112"},
		}, wantUsed: 1},
		{name: "a full range says so, and a released IP is taken again", cidr: "10.43.0.0/29", steps: []step{
			{op: "n"}, {op: "n"}, {op: "n"}, {op: "n"}, {op: "n"}, {op: "n"},
			{op: "n", want: "range is full"},
			{op: "r", ip: "10.43.0.3"},
			{op: "n", wantIP: "10.43.0.3"},
		}, wantUsed: 6},
		{name: "release of a free IP changes nothing", cidr: "10.43.0.0/16", steps: []step{
			{op: "r", ip: "10.43.0.1"}, {op: "r", ip: "192.168.0.1"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewIPRange(tt.cidr)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				var err error
				var got netip.Addr
				switch s.op {
				case "a":
					err = r.Allocate(netip.MustParseAddr(s.ip))
				case "r":
					r.Release(netip.MustParseAddr(s.ip))
				case "n":
					got, err = r.AllocateNext()
				}
				if msg := errText(err); msg != s.want {
					t.Fatalf("step %d %s %s: error %q, want %q", i, s.op, s.ip, msg, s.want)
				}
				if s.wantIP != "" && got.String() != s.wantIP {
					t.Fatalf("step %d: got %s, want %s", i, got, s.wantIP)
				}
				if s.op == "n" && err == nil && !r.Contains(got) {
					t.Fatalf("step %d: %s is outside %s", i, got, tt.cidr)
				}
			}
			if r.Used() != tt.wantUsed {
				t.Errorf("used %d, want %d", r.Used(), tt.wantUsed)
			}
		})
	}
}

type step struct {
	op, ip, want, wantIP string
	port                 int
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestIPRangeTakesTheLowerBandLast checks KEP-3070: dynamic allocation
// leaves the first min(max(16, size/16), 256) addresses (the cluster
// DNS's 10.43.0.10) until the rest are gone.
func TestIPRangeTakesTheLowerBandLast(t *testing.T) {
	r, err := NewIPRange("10.43.0.0/24") // 256 addresses: a band of 16
	if err != nil {
		t.Fatal(err)
	}
	lower := netip.MustParseAddr("10.43.0.16") // first + 15
	for range r.Size() - 16 {
		ip, err := r.AllocateNext()
		if err != nil {
			t.Fatal(err)
		}
		if ip.Compare(lower) <= 0 {
			t.Fatalf("%s given while the upper band has room", ip)
		}
	}
	ip, err := r.AllocateNext()
	if err != nil || ip.Compare(lower) > 0 {
		t.Fatalf("after the upper band: %s, %v; want one of the lower band", ip, err)
	}
}

func TestIPRangeRefusesWhatUpstreamRefuses(t *testing.T) {
	for _, cidr := range []string{"fd00::/48", "10.0.0.0/32", "10.0.0.0/31", "not-a-cidr"} {
		if _, err := NewIPRange(cidr); err == nil {
			t.Errorf("%s: no error", cidr)
		}
	}
	r, err := NewIPRange("fd00::/64")
	if err != nil {
		t.Fatal(err)
	}
	if ip, err := r.AllocateNext(); err != nil || !r.Has(ip) {
		t.Fatalf("a /64 allocates: %s, %v", ip, err)
	}
}

func TestPortRangeAllocatesAsUpstream(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		steps    []step
		wantUsed uint64
	}{
		{name: "a given port is taken once", spec: "30000-32767", steps: []step{
			{op: "a", port: 30080},
			{op: "a", port: 30080, want: "provided port is already allocated"},
		}, wantUsed: 1},
		{name: "a port outside is refused with the range", spec: "30000-32767", steps: []step{
			{op: "a", port: 80, want: "provided port is not in the valid range. The range of valid ports is 30000-32767"},
		}},
		{name: "full, released, taken again", spec: "30000-30002", steps: []step{
			{op: "n"}, {op: "n"}, {op: "n"},
			{op: "n", want: "range is full"},
			{op: "r", port: 30001},
			{op: "n", port: 30001},
		}, wantUsed: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPortRange(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				var err error
				got := 0
				switch s.op {
				case "a":
					err = p.Allocate(s.port)
				case "r":
					p.Release(s.port)
				case "n":
					got, err = p.AllocateNext()
					if s.port != 0 && got != s.port {
						t.Fatalf("step %d: got %d, want %d", i, got, s.port)
					}
				}
				if msg := errText(err); msg != s.want {
					t.Fatalf("step %d %s %d: error %q, want %q", i, s.op, s.port, msg, s.want)
				}
			}
			if p.Used() != tt.wantUsed {
				t.Errorf("used %d, want %d", p.Used(), tt.wantUsed)
			}
		})
	}
	var notInRange *ErrPortNotInRange
	p, _ := NewPortRange("30000-32767")
	if err := p.Allocate(1); !errors.As(err, &notInRange) {
		t.Errorf("error %v is no ErrPortNotInRange", err)
	}
}
