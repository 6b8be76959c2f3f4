package nodeipam

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseRanges(t *testing.T) {
	cases := []struct {
		name    string
		cidrs   []string
		mask    int
		want    string
		wantErr bool
	}{
		{"the default: /16 in /24 blocks", []string{"10.42.0.0/16"}, 24, "[{10.42.0.0/16 24}]", false},
		{"a CIDR given with host bits is masked", []string{"10.42.7.1/16"}, 24, "[{10.42.0.0/16 24}]", false},
		{"dual-stack: IPv6 in /64 blocks", []string{"10.42.0.0/16", "fd42::/56"}, 24, "[{10.42.0.0/16 24} {fd42::/56 64}]", false},
		{"blocks larger than the range", []string{"10.42.0.0/16"}, 8, "", true},
		{"blocks beyond the address", []string{"10.42.0.0/16"}, 33, "", true},
		{"more than 2^16 blocks", []string{"10.0.0.0/8"}, 30, "", true},
		{"two of one family", []string{"10.42.0.0/16", "10.44.0.0/16"}, 24, "", true},
		{"none", nil, 24, "", true},
		{"not a CIDR", []string{"10.42.0.0"}, 24, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRanges(tc.cidrs, tc.mask, DefaultNodeCIDRMaskSizeIPv6)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseRanges(%q, %d) error = %v, want error %v", tc.cidrs, tc.mask, err, tc.wantErr)
			}
			if err == nil && fmt.Sprint(got) != tc.want {
				t.Fatalf("ParseRanges(%q, %d) = %v, want %s", tc.cidrs, tc.mask, got, tc.want)
			}
		})
	}
}

func TestChooseGivesEachNodeAFreeBlock(t *testing.T) {
	r16, _ := ParseRanges([]string{"10.42.0.0/16"}, 24, 64)
	r23, _ := ParseRanges([]string{"10.42.0.0/23"}, 24, 64)
	dual, _ := ParseRanges([]string{"10.42.0.0/16", "fd42::/48"}, 24, 64)
	v6, _ := ParseRanges([]string{"fd42:0:0:ff00::/56"}, 24, 64)
	used := func(ps ...string) map[netip.Prefix]string {
		m := map[netip.Prefix]string{}
		for i, p := range ps {
			m[netip.MustParsePrefix(p)] = fmt.Sprint("node", i)
		}
		return m
	}
	pfx := func(ps ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, p := range ps {
			out = append(out, netip.MustParsePrefix(p))
		}
		return out
	}
	cases := []struct {
		name     string
		ranges   []Range
		used     map[netip.Prefix]string
		reserved []netip.Prefix
		next     []int
		want     string
		wantNext string
		full     bool
	}{
		{"the first block of an empty range", r16, nil, nil, nil, "[10.42.0.0/24]", "[1]", false},
		{"blocks in use are skipped", r16, used("10.42.0.0/24", "10.42.1.0/24"), nil, nil, "[10.42.2.0/24]", "[3]", false},
		{"from where the last choice left off, not a block just released", r16, used("10.42.1.0/24"), nil, []int{2}, "[10.42.2.0/24]", "[3]", false},
		{"wrapping around at the end of the range", r23, used("10.42.1.0/24"), nil, []int{1}, "[10.42.0.0/24]", "[1]", false},
		{"a block overlapping a larger one held is not free", r16, used("10.42.0.0/23"), nil, nil, "[10.42.2.0/24]", "[3]", false},
		{"a block overlapping a reserved range (Services') is not free", r16, nil, pfx("10.42.0.0/25"), nil, "[10.42.1.0/24]", "[2]", false},
		{"a full range is ErrFull", r23, used("10.42.0.0/24", "10.42.1.0/24"), nil, nil, "", "", true},
		{"dual-stack: one block of each family", dual, used("fd42::/64"), nil, nil, "[10.42.0.0/24 fd42:0:0:1::/64]", "[1 2]", false},
		{"IPv6 block index carries across bytes", v6, nil, nil, []int{255}, "[fd42:0:0:ffff::/64]", "[0]", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, next, err := Choose(tc.ranges, tc.used, tc.reserved, tc.next)
			if tc.full {
				if !errors.Is(err, ErrFull) {
					t.Fatalf("Choose = %v, %v; want ErrFull", got, err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != tc.want || fmt.Sprint(next) != tc.wantNext {
				t.Fatalf("Choose = %v, next %v, %v; want %s, next %s", got, next, err, tc.want, tc.wantNext)
			}
		})
	}
}

func TestUsedAndNeedsCIDR(t *testing.T) {
	node := func(name string, cidrs ...string) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{PodCIDRs: cidrs}}
		if len(cidrs) > 0 {
			n.Spec.PodCIDR = cidrs[0]
		}
		return n
	}
	got := Used([]*v1.Node{node("a", "10.42.0.0/24"), node("b"), node("c", "bogus")},
		map[string][]netip.Prefix{"b": {netip.MustParsePrefix("10.42.1.0/24")}})
	if fmt.Sprint(got) != "map[10.42.0.0/24:a 10.42.1.0/24:b]" {
		t.Errorf("Used = %v; want a's podCIDR and b's pending block", got)
	}
	deleting := node("d")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	for _, tc := range []struct {
		node *v1.Node
		want bool
	}{{node("a", "10.42.0.0/24"), false}, {node("b"), true}, {deleting, false}} {
		if got := NeedsCIDR(tc.node); got != tc.want {
			t.Errorf("NeedsCIDR(%s) = %v, want %v", tc.node.Name, got, tc.want)
		}
	}
}
