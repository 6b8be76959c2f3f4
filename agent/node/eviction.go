package node

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// The eviction signals of the kubelet's evictionHard (--eviction-hard).
// The agent evaluates memory.available, nodefs.available,
// nodefs.inodesFree and pid.available; the imagefs and containerfs
// signals are accepted and not evaluated, because the agent's images and
// writable layers live on the file system of its root directory, whose
// nodefs signals stand for them (docs/agent.md).
const (
	SignalMemoryAvailable        = "memory.available"
	SignalAllocatableMemoryAvail = "allocatableMemory.available"
	SignalNodeFsAvailable        = "nodefs.available"
	SignalNodeFsInodesFree       = "nodefs.inodesFree"
	SignalImageFsAvailable       = "imagefs.available"
	SignalImageFsInodesFree      = "imagefs.inodesFree"
	SignalContainerFsAvailable   = "containerfs.available"
	SignalContainerFsInodesFree  = "containerfs.inodesFree"
	SignalPIDAvailable           = "pid.available"
)

var knownSignals = []string{
	SignalMemoryAvailable, SignalAllocatableMemoryAvail, SignalNodeFsAvailable, SignalNodeFsInodesFree,
	SignalImageFsAvailable, SignalImageFsInodesFree, SignalContainerFsAvailable, SignalContainerFsInodesFree,
	SignalPIDAvailable,
}

// DefaultEvictionHard is the kubelet's default evictionHard.
func DefaultEvictionHard() map[string]string {
	return map[string]string{
		SignalMemoryAvailable:   "100Mi",
		SignalNodeFsAvailable:   "10%",
		SignalNodeFsInodesFree:  "5%",
		SignalImageFsAvailable:  "15%",
		SignalImageFsInodesFree: "5%",
	}
}

// Threshold is one hard eviction threshold: an amount, or a fraction of
// the resource's capacity. A signal is met when what is available is
// below it.
type Threshold struct {
	// Quantity is the amount (bytes, inodes, PIDs); used when Percentage
	// is zero.
	Quantity int64
	// Percentage is the fraction of capacity, in (0, 1).
	Percentage float64
}

// below reports whether available is under t for a resource of capacity.
func (t Threshold) below(capacity, available int64) bool {
	if t.Percentage > 0 {
		return float64(available) < t.Percentage*float64(capacity)
	}
	return available < t.Quantity
}

// Thresholds are the hard eviction thresholds by signal. A signal
// without a threshold is never met.
type Thresholds map[string]Threshold

// ParseEvictionHard parses evictionHard statements ("memory.available":
// "100Mi", "nodefs.available": "10%") as the kubelet does: an unknown
// signal, a negative or zero quantity, or a percentage over 100% is an
// error; "0%" and "100%" switch the signal off.
func ParseEvictionHard(statements map[string]string) (Thresholds, error) {
	out := Thresholds{}
	for _, signal := range slices.Sorted(maps.Keys(statements)) {
		val := statements[signal]
		if !slices.Contains(knownSignals, signal) {
			return nil, fmt.Errorf("eviction signal %q: not supported, want one of %s", signal, strings.Join(knownSignals, ", "))
		}
		if p, ok := strings.CutSuffix(val, "%"); ok {
			if val == "0%" || val == "100%" {
				continue
			}
			f, err := strconv.ParseFloat(p, 32)
			if err != nil {
				return nil, fmt.Errorf("eviction threshold %s %q: not a percentage: %w", signal, val, err)
			}
			switch {
			case f < 0:
				return nil, fmt.Errorf("eviction percentage threshold %s must be >= 0%%: %s", signal, val)
			case f > 100:
				return nil, fmt.Errorf("eviction percentage threshold %s must be <= 100%%: %s", signal, val)
			}
			out[signal] = Threshold{Percentage: f / 100}
			continue
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			return nil, fmt.Errorf("eviction threshold %s %q: %w", signal, val, err)
		}
		if q.Sign() <= 0 {
			return nil, fmt.Errorf("eviction threshold %s must be positive: %s", signal, val)
		}
		out[signal] = Threshold{Quantity: q.Value()}
	}
	return out, nil
}

// Observations are what the agent measured of the node's resources;
// a zero capacity means not measured.
type Observations struct {
	MemoryCapacity, MemoryAvailable int64
	DiskCapacity, DiskAvailable     int64
	InodesCapacity, InodesFree      int64
	PIDCapacity, PIDAvailable       int64
}

// Pressures are the pressure conditions' verdicts for obs under hard: nil
// where no signal of the condition was measured.
func Pressures(obs Observations, hard Thresholds) (memory, disk, pid *bool) {
	met := func(signal string, capacity, available int64) bool {
		t, ok := hard[signal]
		return ok && t.below(capacity, available)
	}
	if obs.MemoryCapacity > 0 {
		memory = ptr.To(met(SignalMemoryAvailable, obs.MemoryCapacity, obs.MemoryAvailable))
	}
	if obs.DiskCapacity > 0 || obs.InodesCapacity > 0 {
		v := (obs.DiskCapacity > 0 && met(SignalNodeFsAvailable, obs.DiskCapacity, obs.DiskAvailable)) ||
			(obs.InodesCapacity > 0 && met(SignalNodeFsInodesFree, obs.InodesCapacity, obs.InodesFree))
		disk = &v
	}
	if obs.PIDCapacity > 0 {
		pid = ptr.To(met(SignalPIDAvailable, obs.PIDCapacity, obs.PIDAvailable))
	}
	return memory, disk, pid
}

// DefaultPressureTransitionPeriod is the kubelet's
// evictionPressureTransitionPeriod (--eviction-pressure-transition-period).
const DefaultPressureTransitionPeriod = 5 * time.Minute

// PressureSeen is when each pressure condition's threshold was last met;
// zero: not since the agent started.
type PressureSeen struct {
	Memory, Disk, PID time.Time
}

// HoldPressures reports each pressure for as long as its threshold was met
// within period before now, as the kubelet's eviction manager does
// (nodeConditionsObservedSince over --eviction-pressure-transition-period):
// a node hovering at a threshold does not flap between pressure and none,
// nor its NoSchedule taint come and go with every status update. A
// verdict that is nil (not measured) stays nil. It returns the verdicts
// to report and seen updated with the pressures observed now.
func HoldPressures(seen PressureSeen, now time.Time, period time.Duration, memory, disk, pid *bool) (PressureSeen, *bool, *bool, *bool) {
	hold := func(last *time.Time, observed *bool) *bool {
		if observed == nil {
			return nil
		}
		if *observed {
			*last = now
			return observed
		}
		return ptr.To(!last.IsZero() && now.Sub(*last) < period)
	}
	memory = hold(&seen.Memory, memory)
	disk = hold(&seen.Disk, disk)
	pid = hold(&seen.PID, pid)
	return seen, memory, disk, pid
}
