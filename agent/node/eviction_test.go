package node

import (
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestParseEvictionHardAsTheKubelet: percentages and quantities parse as
// the kubelet's parseThresholdStatement does, "0%" and "100%" switch a
// signal off, and bad statements are refused with the signal named.
func TestParseEvictionHardAsTheKubelet(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		want    Thresholds
		wantErr string
	}{
		{"the kubelet's defaults", DefaultEvictionHard(), Thresholds{
			SignalMemoryAvailable: {Quantity: 100 << 20}, SignalNodeFsAvailable: {Percentage: 0.10},
			SignalNodeFsInodesFree: {Percentage: 0.05}, SignalImageFsAvailable: {Percentage: 0.15}, SignalImageFsInodesFree: {Percentage: 0.05},
		}, ""},
		{"0% and 100% switch a signal off", map[string]string{SignalNodeFsAvailable: "0%", SignalNodeFsInodesFree: "100%", SignalPIDAvailable: "1k"},
			Thresholds{SignalPIDAvailable: {Quantity: 1000}}, ""},
		{"fractional percentage", map[string]string{SignalNodeFsAvailable: "2.5%"}, Thresholds{SignalNodeFsAvailable: {Percentage: 0.025}}, ""},
		{"unknown signal", map[string]string{"disk.available": "1Gi"}, nil, `eviction signal "disk.available": not supported`},
		{"over 100%", map[string]string{SignalNodeFsAvailable: "101%"}, nil, "nodefs.available must be <= 100%: 101%"},
		{"negative percentage", map[string]string{SignalNodeFsAvailable: "-1%"}, nil, "must be >= 0%"},
		{"zero quantity", map[string]string{SignalMemoryAvailable: "0"}, nil, "memory.available must be positive"},
		{"not a quantity", map[string]string{SignalMemoryAvailable: "lots"}, nil, `eviction threshold memory.available "lots"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseEvictionHard(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for s, w := range tc.want {
				g := got[s]
				if g.Quantity != w.Quantity || g.Percentage-w.Percentage > 1e-6 || w.Percentage-g.Percentage > 1e-6 {
					t.Errorf("%s: got %+v, want %+v", s, g, w)
				}
			}
		})
	}
}

// TestPressuresFollowTheThresholds: each condition is True exactly when
// one of its signals is under its threshold, Unknown (nil) when nothing
// of it was measured, and a signal switched off never presses.
func TestPressuresFollowTheThresholds(t *testing.T) {
	defaults, err := ParseEvictionHard(DefaultEvictionHard())
	if err != nil {
		t.Fatal(err)
	}
	const gi = 1 << 30
	tests := []struct {
		name              string
		obs               Observations
		hard              Thresholds
		memory, disk, pid string
	}{
		{"nothing measured", Observations{}, defaults, "nil", "nil", "nil"},
		{"plenty of everything", Observations{MemoryCapacity: 8 * gi, MemoryAvailable: 4 * gi, DiskCapacity: 100 * gi, DiskAvailable: 50 * gi,
			InodesCapacity: 1000, InodesFree: 900, PIDCapacity: 1000, PIDAvailable: 10}, defaults, "false", "false", "false"},
		{"memory under 100Mi", Observations{MemoryCapacity: 8 * gi, MemoryAvailable: 99 << 20}, defaults, "true", "nil", "nil"},
		{"disk under 10% of its size", Observations{DiskCapacity: 100 * gi, DiskAvailable: 9 * gi}, defaults, "nil", "true", "nil"},
		{"inodes under 5%", Observations{DiskCapacity: 100 * gi, DiskAvailable: 50 * gi, InodesCapacity: 1000, InodesFree: 49}, defaults, "nil", "true", "nil"},
		{"disk threshold switched off", Observations{DiskCapacity: 100 * gi, DiskAvailable: 1 * gi}, Thresholds{}, "nil", "false", "nil"},
		{"pid threshold given", Observations{PIDCapacity: 1000, PIDAvailable: 50}, Thresholds{SignalPIDAvailable: {Percentage: 0.10}}, "nil", "nil", "true"},
	}
	str := func(b *bool) string {
		if b == nil {
			return "nil"
		}
		if *b {
			return "true"
		}
		return "false"
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, d, p := Pressures(tc.obs, tc.hard)
			if str(m) != tc.memory || str(d) != tc.disk || str(p) != tc.pid {
				t.Errorf("memory, disk, pid pressure = %s %s %s, want %s %s %s", str(m), str(d), str(p), tc.memory, tc.disk, tc.pid)
			}
		})
	}
}

// TestAllocatableHoldsTheThresholdsBack: allocatable memory and ephemeral
// storage are capacity less the memory.available and nodefs.available
// thresholds, as the kubelet's hard eviction reservation.
func TestAllocatableHoldsTheThresholdsBack(t *testing.T) {
	info := Info{MaxPods: 110, CPUs: 2, MemoryBytes: 1 << 30, EphemeralStorageBytes: 100 << 30}
	tests := []struct {
		name          string
		hard          Thresholds
		memory, store string
	}{
		{"defaults", nil, "924Mi", "90Gi"},
		{"switched off", Thresholds{}, "1Gi", "100Gi"},
		{"given", Thresholds{SignalMemoryAvailable: {Percentage: 0.5}, SignalNodeFsAvailable: {Quantity: 1 << 30}}, "512Mi", "99Gi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info.EvictionHard = tc.hard
			a := Build(info, nil, metav1.Now()).Allocatable
			for r, want := range map[v1.ResourceName]string{v1.ResourceMemory: tc.memory, v1.ResourceEphemeralStorage: tc.store} {
				if got := a[r]; got.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("allocatable %s = %s, want %s", r, got.String(), want)
				}
			}
		})
	}
}

func TestHoldPressuresKeepsAPressureForTheTransitionPeriod(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 17, 0, 0, 0, time.UTC)
	period := 5 * time.Minute
	yes, no := ptr.To(true), ptr.To(false)
	for _, tc := range []struct {
		name     string
		seen     time.Time // the disk's last pressure
		now      time.Time
		observed *bool
		want     *bool
		wantSeen time.Time
	}{
		{"observed now is reported and remembered", time.Time{}, t0, yes, yes, t0},
		{"never observed is none", time.Time{}, t0, no, no, time.Time{}},
		{"gone a minute ago is still reported", t0, t0.Add(time.Minute), no, yes, t0},
		{"gone just inside the period is still reported", t0, t0.Add(period - time.Nanosecond), no, yes, t0},
		{"gone for the whole period is cleared", t0, t0.Add(period), no, no, t0},
		{"observed again restarts the period", t0, t0.Add(4 * time.Minute), yes, yes, t0.Add(4 * time.Minute)},
		{"not measured stays unknown", t0, t0.Add(time.Minute), nil, nil, t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen, m, d, p := HoldPressures(PressureSeen{Disk: tc.seen}, tc.now, period, no, tc.observed, nil)
			if (d == nil) != (tc.want == nil) || (d != nil && *d != *tc.want) {
				t.Errorf("disk pressure %v, want %v", fmtBool(d), fmtBool(tc.want))
			}
			if !seen.Disk.Equal(tc.wantSeen) {
				t.Errorf("disk last seen %v, want %v", seen.Disk, tc.wantSeen)
			}
			// The other conditions are held apart from the disk's.
			if m == nil || *m || p != nil || !seen.Memory.IsZero() || !seen.PID.IsZero() {
				t.Errorf("memory %v pid %v, seen %+v: want false, unknown, never", fmtBool(m), fmtBool(p), seen)
			}
		})
	}
	t.Run("a zero period clears at once", func(t *testing.T) {
		if _, _, d, _ := HoldPressures(PressureSeen{Disk: t0}, t0.Add(time.Nanosecond), 0, nil, no, nil); d == nil || *d {
			t.Errorf("disk pressure %v, want false", fmtBool(d))
		}
	})
}

func fmtBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	return strconv.FormatBool(*b)
}
