package cri

import (
	"reflect"
	"testing"

	"github.com/kite-project/kite/agent/runtime"
)

// TestPodCgroupLayout: the kubelet's layout of pod cgroups under Kite's
// root, by class and driver, and the paths systemd gives the slices.
func TestPodCgroupLayout(t *testing.T) {
	const uid = "0a1b-2c3d"
	for _, tc := range []struct {
		driver       CgroupDriver
		class        string
		parent, path string
	}{
		{CgroupFS, "Guaranteed", "/kite/kubepods/pod0a1b-2c3d", "/kite/kubepods/pod0a1b-2c3d"},
		{CgroupFS, "Burstable", "/kite/kubepods/burstable/pod0a1b-2c3d", "/kite/kubepods/burstable/pod0a1b-2c3d"},
		{CgroupFS, "BestEffort", "/kite/kubepods/besteffort/pod0a1b-2c3d", "/kite/kubepods/besteffort/pod0a1b-2c3d"},
		{CgroupSystemd, "Guaranteed", "kite-kubepods-pod0a1b_2c3d.slice", "/kite.slice/kite-kubepods.slice/kite-kubepods-pod0a1b_2c3d.slice"},
		{CgroupSystemd, "Burstable", "kite-kubepods-burstable-pod0a1b_2c3d.slice",
			"/kite.slice/kite-kubepods.slice/kite-kubepods-burstable.slice/kite-kubepods-burstable-pod0a1b_2c3d.slice"},
		{CgroupSystemd, "BestEffort", "kite-kubepods-besteffort-pod0a1b_2c3d.slice",
			"/kite.slice/kite-kubepods.slice/kite-kubepods-besteffort.slice/kite-kubepods-besteffort-pod0a1b_2c3d.slice"},
	} {
		parent := PodCgroupParent(tc.driver, uid, tc.class)
		if parent != tc.parent {
			t.Errorf("%s %s: parent %q, want %q", tc.driver, tc.class, parent, tc.parent)
		}
		if got := cgroupPath(tc.driver, parent); got != tc.path {
			t.Errorf("%s %s: path %q, want %q", tc.driver, tc.class, got, tc.path)
		}
	}
	if got, want := tierParent(CgroupSystemd, "Burstable"), "kite-kubepods-burstable.slice"; got != want {
		t.Errorf("systemd burstable tier %q, want %q", got, want)
	}
	if got, want := tierParent(CgroupFS, "BestEffort"), "/kite/kubepods/besteffort"; got != want {
		t.Errorf("cgroupfs besteffort tier %q, want %q", got, want)
	}
	// The older layout is still a candidate, after the tiers.
	if got, want := podCgroupCandidates(CgroupFS, uid), []string{"/kite/kubepods/pod0a1b-2c3d", "/kite/kubepods/burstable/pod0a1b-2c3d",
		"/kite/kubepods/besteffort/pod0a1b-2c3d", "/kite/pod0a1b-2c3d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("candidates %q, want %q", got, want)
	}
	if got, want := cgroupPath(CgroupSystemd, legacyCgroupParent(CgroupSystemd, uid)), "/kite.slice/kite-pod0a1b_2c3d.slice"; got != want {
		t.Errorf("systemd legacy path %q, want %q", got, want)
	}
}

// TestQOSTierWrites: the tiers' files, v1 shares or v2 weights of them.
func TestQOSTierWrites(t *testing.T) {
	tiers := runtime.QOSTiers{BurstableCPUShares: 1024, BestEffortCPUShares: 2}
	if got, want := qosTierWrites(tiers, false), []tierWrite{{"Burstable", "cpu.shares", "1024"}, {"BestEffort", "cpu.shares", "2"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v1: %v, want %v", got, want)
	}
	if got, want := qosTierWrites(tiers, true), []tierWrite{{"Burstable", "cpu.weight", "100"}, {"BestEffort", "cpu.weight", "1"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v2: %v, want %v", got, want)
	}
	if got := qosTierWrites(runtime.QOSTiers{}, false); len(got) != 0 {
		t.Errorf("zero tiers: %v, want no write", got)
	}
}
