package servicealloc

import (
	"errors"
	"fmt"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// ErrPortAllocated is upstream's error for a node port another Service
// holds.
var ErrPortAllocated = errors.New("provided port is already allocated")

// ErrPortNotInRange is upstream's error for a node port outside the range.
type ErrPortNotInRange struct{ ValidPorts string }

func (e *ErrPortNotInRange) Error() string {
	return fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", e.ValidPorts)
}

// PortRange hands out node ports of --service-node-port-range.
type PortRange struct {
	r   utilnet.PortRange
	set offsets
}

// NewPortRange makes the range of spec ("30000-32767", or "30000+2767").
func NewPortRange(spec string) (*PortRange, error) {
	pr, err := utilnet.ParsePortRange(spec)
	if err != nil {
		return nil, fmt.Errorf("node port range %q: %w", spec, err)
	}
	const lo, step, hi = 16, 32, 128 // upstream's portallocator
	size := uint64(pr.Size)
	return &PortRange{r: *pr, set: newOffsets(size, reservedBand(size, lo, step, hi))}, nil
}

// String is the range as upstream prints it ("30000-32767").
func (p *PortRange) String() string { return p.r.String() }

// Size is how many ports the range has; Used how many are taken.
func (p *PortRange) Size() uint64 { return p.set.size }
func (p *PortRange) Used() uint64 { return p.set.count() }

func (p *PortRange) offset(port int) (uint64, error) {
	if !p.r.Contains(port) {
		return 0, &ErrPortNotInRange{ValidPorts: p.r.String()}
	}
	return uint64(port - p.r.Base), nil
}

// Allocate takes port: ErrPortNotInRange, ErrPortAllocated or nil.
func (p *PortRange) Allocate(port int) error {
	i, err := p.offset(port)
	if err != nil {
		return err
	}
	if !p.set.take(i) {
		return ErrPortAllocated
	}
	return nil
}

// AllocateNext takes a free port, or fails with ErrFull.
func (p *PortRange) AllocateNext() (int, error) {
	i, err := p.set.next()
	if err != nil {
		return 0, err
	}
	return p.r.Base + int(i), nil
}

// Has reports whether port is in the range and taken.
func (p *PortRange) Has(port int) bool {
	i, err := p.offset(port)
	return err == nil && p.set.has(i)
}

// Release gives port back; one not taken or out of range is ignored.
func (p *PortRange) Release(port int) {
	if i, err := p.offset(port); err == nil {
		p.set.release(i)
	}
}
