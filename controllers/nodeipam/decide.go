package nodeipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"

	v1 "k8s.io/api/core/v1"
)

// Defaults of kite server's --cluster-cidr and --node-cidr-mask-size.
// 10.42.0.0/16 is k3s's pod range, beside the Services' 10.43.0.0/16
// (registry/builtin's default, also k3s's): one lightweight distribution's
// pair of ranges, known not to overlap, which users of k3s already keep
// clear in their networks. Blocks of /24 give 256 nodes of 254 pods each;
// IPv6 ranges are cut into /64s, as upstream's --node-cidr-mask-size-ipv6.
const (
	DefaultClusterCIDR          = "10.42.0.0/16"
	DefaultNodeCIDRMaskSize     = 24
	DefaultNodeCIDRMaskSizeIPv6 = 64
	// maxMaskDiff is upstream's clusterSubnetMaxDiff: a range is cut into
	// at most 2^16 blocks.
	maxMaskDiff = 16
)

// ErrFull is the error of a range without a free block (upstream's
// "CIDR allocation failed; there are no remaining CIDRs left to
// allocate in the accepted range").
var ErrFull = errors.New("no remaining CIDRs left to allocate in the accepted range")

// Range is one cluster CIDR cut into node blocks of Bits.
type Range struct {
	Prefix netip.Prefix
	Bits   int
}

// ParseRanges reads --cluster-cidr (one CIDR, or two of different
// families for dual-stack, as kube-controller-manager takes them) with
// the node block sizes of each family, and checks them as upstream's
// NewCIDRSet and its flag validation do.
func ParseRanges(cidrs []string, maskIPv4, maskIPv6 int) ([]Range, error) {
	if len(cidrs) == 0 || len(cidrs) > 2 {
		return nil, fmt.Errorf("cluster CIDRs %q: want one, or two of different IP families", cidrs)
	}
	var out []Range
	for _, s := range cidrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("cluster CIDR %q: %w", s, err)
		}
		p = p.Masked()
		bits := maskIPv4
		if p.Addr().Is6() {
			bits = maskIPv6
		}
		switch {
		case bits < p.Bits() || bits > p.Addr().BitLen():
			return nil, fmt.Errorf("cluster CIDR %s: node CIDR mask size %d must lie between %d and %d", p, bits, p.Bits(), p.Addr().BitLen())
		case bits-p.Bits() > maxMaskDiff:
			return nil, fmt.Errorf("cluster CIDR %s: node CIDR mask size %d cuts it into more than 2^%d blocks", p, bits, maxMaskDiff)
		}
		for _, o := range out {
			if o.Prefix.Addr().Is4() == p.Addr().Is4() {
				return nil, fmt.Errorf("cluster CIDRs %q: two of one IP family (dual-stack takes one IPv4 and one IPv6)", cidrs)
			}
		}
		out = append(out, Range{Prefix: p, Bits: bits})
	}
	return out, nil
}

// size is the number of blocks.
func (r Range) size() int { return 1 << (r.Bits - r.Prefix.Bits()) }

// block is the i-th block of the range: the range's address plus i
// shifted to the block bits.
func (r Range) block(i int) netip.Prefix {
	b := r.Prefix.Addr().AsSlice()
	v := new(big.Int).SetBytes(b)
	v.Add(v, new(big.Int).Lsh(big.NewInt(int64(i)), uint(len(b)*8-r.Bits)))
	a, _ := netip.AddrFromSlice(v.FillBytes(make([]byte, len(b))))
	return netip.PrefixFrom(a, r.Bits)
}

// Used are the blocks in use: every podCIDR the nodes have (a node's
// may be one the controller did not give: an administrator's, or of a
// range since changed), and those the controller gave that its cache does
// not show yet (pending, by node name). The value names the holder.
func Used(nodes []*v1.Node, pending map[string][]netip.Prefix) map[netip.Prefix]string {
	used := map[netip.Prefix]string{}
	for _, n := range nodes {
		for _, s := range n.Spec.PodCIDRs {
			if p, err := netip.ParsePrefix(s); err == nil {
				used[p.Masked()] = n.Name
			}
		}
	}
	for name, ps := range pending {
		for _, p := range ps {
			used[p] = name
		}
	}
	return used
}

// NeedsCIDR says whether the controller gives node its podCIDRs: it has
// none and is not being deleted. A node's podCIDRs are never changed once
// set (the API server refuses it too).
func NeedsCIDR(node *v1.Node) bool {
	return len(node.Spec.PodCIDRs) == 0 && node.Spec.PodCIDR == "" && node.DeletionTimestamp == nil
}

// Choose picks one free block of each range for a node, as upstream's
// CidrSet.AllocateNext: scanning from next[i] (where the last choice
// left off, so that a block just released is not handed out again at
// once) and wrapping around. A block is free when no node holds it
// (used, including blocks that only overlap one held) and it overlaps no
// reserved prefix (the Services' ranges, as upstream filters out the
// service CIDR). It returns the blocks and the cursors to pass next time;
// a range without a free block is ErrFull.
func Choose(ranges []Range, used map[netip.Prefix]string, reserved []netip.Prefix, next []int) ([]netip.Prefix, []int, error) {
	var taken []netip.Prefix
	for p := range used {
		taken = append(taken, p)
	}
	taken = append(taken, reserved...)
	out := make([]netip.Prefix, 0, len(ranges))
	cursors := make([]int, len(ranges))
	for i, r := range ranges {
		start := 0
		if i < len(next) {
			start = next[i]
		}
		n := r.size()
		found := false
		for k := range n {
			idx := (start + k) % n
			b := r.block(idx)
			if overlapsAny(b, taken) {
				continue
			}
			out, cursors[i], found = append(out, b), (idx+1)%n, true
			break
		}
		if !found {
			return nil, next, fmt.Errorf("cluster CIDR %s: %w", r.Prefix, ErrFull)
		}
	}
	return out, cursors, nil
}

func overlapsAny(b netip.Prefix, ps []netip.Prefix) bool {
	for _, p := range ps {
		if b.Overlaps(p) {
			return true
		}
	}
	return false
}
