package servicealloc

import (
	"errors"
	"math/rand/v2"
)

// ErrFull is upstream's error when a range has nothing left.
var ErrFull = errors.New("range is full")

// offsets is a set of taken offsets in [0, size), of which [0, reserved)
// is the lower band that next takes from last.
type offsets struct {
	size, reserved uint64
	used           map[uint64]struct{}
}

func newOffsets(size, reserved uint64) offsets {
	return offsets{size: size, reserved: reserved, used: map[uint64]struct{}{}}
}

// reservedBand is upstream's size of the lower band:
// min(max(lo, size/step), hi), none for a range of lo or fewer.
func reservedBand(size, lo, step, hi uint64) uint64 {
	if size <= lo {
		return 0
	}
	return min(max(lo, size/step), hi)
}

func (o *offsets) has(i uint64) bool { _, ok := o.used[i]; return ok }

// take marks i taken and reports whether it was free.
func (o *offsets) take(i uint64) bool {
	if o.has(i) {
		return false
	}
	o.used[i] = struct{}{}
	return true
}

func (o *offsets) release(i uint64) { delete(o.used, i) }

func (o *offsets) count() uint64 { return uint64(len(o.used)) }

// next takes a free offset: from a random place of the upper band
// onwards, wrapping, then from the lower band upwards, as upstream's
// allocators do.
func (o *offsets) next() (uint64, error) {
	if o.count() >= o.size {
		return 0, ErrFull
	}
	if upper := o.size - o.reserved; upper > 0 {
		start := rand.Uint64N(upper)
		for k := range upper {
			i := o.reserved + (start+k)%upper
			if o.take(i) {
				return i, nil
			}
		}
	}
	for i := range o.reserved {
		if o.take(i) {
			return i, nil
		}
	}
	return 0, ErrFull
}
