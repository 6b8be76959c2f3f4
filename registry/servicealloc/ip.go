package servicealloc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	v1 "k8s.io/api/core/v1"
)

// ErrIPAllocated is upstream's error for an IP another Service holds.
var ErrIPAllocated = errors.New("provided IP is already allocated")

// ErrIPNotInRange is upstream's error for an IP outside the range.
type ErrIPNotInRange struct {
	IP         netip.Addr
	ValidRange string
}

func (e *ErrIPNotInRange) Error() string {
	return fmt.Sprintf("the provided IP (%v) is not in the valid range. The range of valid IPs is %s", e.IP, e.ValidRange)
}

// IPRange hands out the addresses of one service CIDR: every address but
// the network's and, for IPv4, the broadcast address, as upstream.
type IPRange struct {
	prefix netip.Prefix
	first  netip.Addr // the network address + 1
	set    offsets
}

// NewIPRange makes the range of cidr ("10.43.0.0/16"). An IPv6 prefix
// must be /64 or longer, as upstream requires.
func NewIPRange(cidr string) (*IPRange, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("service CIDR %q: %w", cidr, err)
	}
	p = p.Masked()
	hostBits := p.Addr().BitLen() - p.Bits()
	switch {
	case p.Addr().Is6() && p.Bits() < 64:
		return nil, fmt.Errorf("service CIDR %q: shortest allowed prefix length for service CIDR is 64, got %d", cidr, p.Bits())
	case p.Addr().Is4() && hostBits < 2, hostBits < 1:
		return nil, fmt.Errorf("service CIDR %q: no address to allocate", cidr)
	}
	whole := ^uint64(0) // a /64: 2^64 - 1, near enough
	if hostBits < 64 {
		whole = 1 << hostBits
	}
	size := whole - 1 // no network address
	if p.Addr().Is4() {
		size-- // nor broadcast
	}
	const lo, step, hi = 16, 16, 256 // upstream's ipallocator, sized by the whole CIDR
	return &IPRange{prefix: p, first: p.Addr().Next(), set: newOffsets(size, reservedBand(whole, lo, step, hi))}, nil
}

// CIDR is the range's prefix.
func (r *IPRange) CIDR() netip.Prefix { return r.prefix }

// Family is the range's IP family.
func (r *IPRange) Family() v1.IPFamily {
	if r.prefix.Addr().Is4() {
		return v1.IPv4Protocol
	}
	return v1.IPv6Protocol
}

// First is the first address of the range (the `kubernetes` Service's).
func (r *IPRange) First() netip.Addr { return r.first }

// Size is how many addresses the range has; Used how many are taken.
func (r *IPRange) Size() uint64 { return r.set.size }
func (r *IPRange) Used() uint64 { return r.set.count() }

// offset is ip's place in the range, or ErrIPNotInRange.
func (r *IPRange) offset(ip netip.Addr) (uint64, error) {
	ip = ip.Unmap()
	if !r.prefix.Contains(ip) || ip == r.prefix.Addr() {
		return 0, &ErrIPNotInRange{IP: ip, ValidRange: r.prefix.String()}
	}
	d := low64(ip) - low64(r.first)
	if d >= r.set.size {
		return 0, &ErrIPNotInRange{IP: ip, ValidRange: r.prefix.String()} // IPv4 broadcast
	}
	return d, nil
}

// Allocate takes ip: ErrIPNotInRange, ErrIPAllocated or nil.
func (r *IPRange) Allocate(ip netip.Addr) error {
	i, err := r.offset(ip)
	if err != nil {
		return err
	}
	if !r.set.take(i) {
		return ErrIPAllocated
	}
	return nil
}

// AllocateNext takes a free address, or fails with ErrFull.
func (r *IPRange) AllocateNext() (netip.Addr, error) {
	i, err := r.set.next()
	if err != nil {
		return netip.Addr{}, err
	}
	return r.at(i), nil
}

// Has reports whether ip is in the range and taken.
func (r *IPRange) Has(ip netip.Addr) bool {
	i, err := r.offset(ip)
	return err == nil && r.set.has(i)
}

// Release gives ip back; one not taken or not in the range is ignored.
func (r *IPRange) Release(ip netip.Addr) {
	if i, err := r.offset(ip); err == nil {
		r.set.release(i)
	}
}

// Contains reports whether ip is an address the range hands out.
func (r *IPRange) Contains(ip netip.Addr) bool {
	_, err := r.offset(ip)
	return err == nil
}

func (r *IPRange) at(i uint64) netip.Addr {
	b := r.first.As16()
	binary.BigEndian.PutUint64(b[8:], binary.BigEndian.Uint64(b[8:])+i)
	a := netip.AddrFrom16(b)
	if r.first.Is4() {
		return a.Unmap()
	}
	return a
}

// low64 is the low 64 bits of an address (all of an IPv4 one).
func low64(ip netip.Addr) uint64 {
	b := ip.As16()
	return binary.BigEndian.Uint64(b[8:])
}
