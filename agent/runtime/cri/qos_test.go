package cri

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/kite-project/kite/agent/runtime"
)

// TestPodCgroupLayout: the kubelet's layout of pod cgroups under the
// agent's cgroup root (its --cgroup-root), by class, driver and root, and
// the paths systemd gives the slices.
func TestPodCgroupLayout(t *testing.T) {
	const uid = "0a1b-2c3d"
	for _, tc := range []struct {
		driver       CgroupDriver
		root, class  string
		parent, path string
	}{
		// The default root, "" and /kite alike.
		{CgroupFS, "", "Guaranteed", "/kite/kubepods/pod0a1b-2c3d", "/kite/kubepods/pod0a1b-2c3d"},
		{CgroupFS, "/kite", "Guaranteed", "/kite/kubepods/pod0a1b-2c3d", "/kite/kubepods/pod0a1b-2c3d"},
		{CgroupFS, "/kite", "Burstable", "/kite/kubepods/burstable/pod0a1b-2c3d", "/kite/kubepods/burstable/pod0a1b-2c3d"},
		{CgroupFS, "/kite", "BestEffort", "/kite/kubepods/besteffort/pod0a1b-2c3d", "/kite/kubepods/besteffort/pod0a1b-2c3d"},
		{CgroupSystemd, "", "Guaranteed", "kite-kubepods-pod0a1b_2c3d.slice", "/kite.slice/kite-kubepods.slice/kite-kubepods-pod0a1b_2c3d.slice"},
		{CgroupSystemd, "/kite", "Burstable", "kite-kubepods-burstable-pod0a1b_2c3d.slice",
			"/kite.slice/kite-kubepods.slice/kite-kubepods-burstable.slice/kite-kubepods-burstable-pod0a1b_2c3d.slice"},
		{CgroupSystemd, "/kite", "BestEffort", "kite-kubepods-besteffort-pod0a1b_2c3d.slice",
			"/kite.slice/kite-kubepods.slice/kite-kubepods-besteffort.slice/kite-kubepods-besteffort-pod0a1b_2c3d.slice"},
		// A root of two components, one with a dash (an underscore
		// under systemd, as the kubelet escapes it).
		{CgroupFS, "/kite/node-b", "Guaranteed", "/kite/node-b/kubepods/pod0a1b-2c3d", "/kite/node-b/kubepods/pod0a1b-2c3d"},
		{CgroupFS, "/kite/node-b", "Burstable", "/kite/node-b/kubepods/burstable/pod0a1b-2c3d", "/kite/node-b/kubepods/burstable/pod0a1b-2c3d"},
		{CgroupFS, "/kite/node-b", "BestEffort", "/kite/node-b/kubepods/besteffort/pod0a1b-2c3d", "/kite/node-b/kubepods/besteffort/pod0a1b-2c3d"},
		{CgroupSystemd, "/kite/node-b", "Guaranteed", "kite-node_b-kubepods-pod0a1b_2c3d.slice",
			"/kite.slice/kite-node_b.slice/kite-node_b-kubepods.slice/kite-node_b-kubepods-pod0a1b_2c3d.slice"},
		{CgroupSystemd, "/kite/node-b", "Burstable", "kite-node_b-kubepods-burstable-pod0a1b_2c3d.slice",
			"/kite.slice/kite-node_b.slice/kite-node_b-kubepods.slice/kite-node_b-kubepods-burstable.slice/kite-node_b-kubepods-burstable-pod0a1b_2c3d.slice"},
		{CgroupSystemd, "/kite/node-b", "BestEffort", "kite-node_b-kubepods-besteffort-pod0a1b_2c3d.slice",
			"/kite.slice/kite-node_b.slice/kite-node_b-kubepods.slice/kite-node_b-kubepods-besteffort.slice/kite-node_b-kubepods-besteffort-pod0a1b_2c3d.slice"},
		// The host's root: the kubelet's own layout.
		{CgroupFS, "/", "Guaranteed", "/kubepods/pod0a1b-2c3d", "/kubepods/pod0a1b-2c3d"},
		{CgroupFS, "/", "Burstable", "/kubepods/burstable/pod0a1b-2c3d", "/kubepods/burstable/pod0a1b-2c3d"},
		{CgroupFS, "/", "BestEffort", "/kubepods/besteffort/pod0a1b-2c3d", "/kubepods/besteffort/pod0a1b-2c3d"},
		{CgroupSystemd, "/", "Guaranteed", "kubepods-pod0a1b_2c3d.slice", "/kubepods.slice/kubepods-pod0a1b_2c3d.slice"},
		{CgroupSystemd, "/", "Burstable", "kubepods-burstable-pod0a1b_2c3d.slice",
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b_2c3d.slice"},
		{CgroupSystemd, "/", "BestEffort", "kubepods-besteffort-pod0a1b_2c3d.slice",
			"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0a1b_2c3d.slice"},
	} {
		if err := ValidateCgroupRoot(tc.root); err != nil {
			t.Fatalf("root %q refused: %v", tc.root, err)
		}
		parent := PodCgroupParent(tc.driver, tc.root, uid, tc.class)
		if parent != tc.parent {
			t.Errorf("%s %q %s: parent %q, want %q", tc.driver, tc.root, tc.class, parent, tc.parent)
		}
		if got := cgroupPath(tc.driver, parent); got != tc.path {
			t.Errorf("%s %q %s: path %q, want %q", tc.driver, tc.root, tc.class, got, tc.path)
		}
		// The tier is the pod's parent less the pod.
		if got, want := cgroupPath(tc.driver, tierParent(tc.driver, rootComponents(tc.root), tc.class)), tc.path[:strings.LastIndex(tc.path, "/")]; got != want {
			t.Errorf("%s %q %s: tier path %q, want %q", tc.driver, tc.root, tc.class, got, want)
		}
	}
	// The older layout is still a candidate, after the tiers, and stays
	// under /kite whatever the root: older agents had no other.
	for _, tc := range []struct {
		driver CgroupDriver
		root   string
		want   []string
	}{
		{CgroupFS, "/kite", []string{"/kite/kubepods/pod0a1b-2c3d", "/kite/kubepods/burstable/pod0a1b-2c3d",
			"/kite/kubepods/besteffort/pod0a1b-2c3d", "/kite/pod0a1b-2c3d"}},
		{CgroupFS, "/kite/node-b", []string{"/kite/node-b/kubepods/pod0a1b-2c3d", "/kite/node-b/kubepods/burstable/pod0a1b-2c3d",
			"/kite/node-b/kubepods/besteffort/pod0a1b-2c3d", "/kite/pod0a1b-2c3d"}},
		{CgroupFS, "/", []string{"/kubepods/pod0a1b-2c3d", "/kubepods/burstable/pod0a1b-2c3d",
			"/kubepods/besteffort/pod0a1b-2c3d", "/kite/pod0a1b-2c3d"}},
		{CgroupSystemd, "/kite/node-b", []string{"kite-node_b-kubepods-pod0a1b_2c3d.slice", "kite-node_b-kubepods-burstable-pod0a1b_2c3d.slice",
			"kite-node_b-kubepods-besteffort-pod0a1b_2c3d.slice", "kite-pod0a1b_2c3d.slice"}},
	} {
		if got := podCgroupCandidates(tc.driver, rootComponents(tc.root), uid); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %q: candidates %q, want %q", tc.driver, tc.root, got, tc.want)
		}
	}
	if got, want := cgroupPath(CgroupSystemd, legacyCgroupParent(CgroupSystemd, uid)), "/kite.slice/kite-pod0a1b_2c3d.slice"; got != want {
		t.Errorf("systemd legacy path %q, want %q", got, want)
	}
}

// TestCgroupRootRefused: roots the kubelet's naming cannot carry are
// refused with a message naming the root.
func TestCgroupRootRefused(t *testing.T) {
	for _, tc := range []struct{ root, want string }{
		{"kite", "want an absolute cgroupfs path"},
		{"kite/node-b", "want an absolute cgroupfs path"},
		{"/kite/", "empty component"},
		{"//kite", "empty component"},
		{"/kite//node-b", "empty component"},
		{"/kite/..", `component ".."`},
		{"/./kite", `component "."`},
		{"/kite/node_b", "underscore"},
		{"/kite/node b", `has ' '`},
		{"/kite/node@b", `has '@'`},
		{"/kite/" + strings.Repeat("a", 256), "longer than 255 bytes"},
	} {
		err := ValidateCgroupRoot(tc.root)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.root)) {
			t.Errorf("root %q: error %v, want one naming the root and containing %q", tc.root, err, tc.want)
		}
	}
	for _, root := range []string{"", "/", "/kite", "/kite/node-b", "/kite/kite-node-2", "/a.b/c:d/E-9"} {
		if err := ValidateCgroupRoot(root); err != nil {
			t.Errorf("root %q refused: %v", root, err)
		}
	}
	// Under systemd the longest pod slice must fit a unit name; cgroupfs
	// takes the same root.
	long := "/" + strings.Repeat("a", 200)
	if err := ValidateCgroupRoot(long); err != nil {
		t.Fatal(err)
	}
	if err := validateRootForDriver(CgroupSystemd, rootComponents(long)); err == nil || !strings.Contains(err.Error(), "longer than systemd's 255") {
		t.Errorf("systemd, root of 200 bytes: %v, want a refusal", err)
	}
	if err := validateRootForDriver(CgroupFS, rootComponents(long)); err != nil {
		t.Errorf("cgroupfs, root of 200 bytes: %v", err)
	}
	if err := validateRootForDriver(CgroupSystemd, rootComponents("/kite/node-b")); err != nil {
		t.Errorf("systemd /kite/node-b: %v", err)
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

// TestNewRefusesABadCgroupRoot: the runtime refuses a root it cannot name
// pods under before it dials.
func TestNewRefusesABadCgroupRoot(t *testing.T) {
	_, err := New(context.Background(), Options{Endpoint: "/nonexistent/cri.sock", CgroupRoot: "/kite/node_b"})
	if err == nil || !strings.Contains(err.Error(), `cgroup root "/kite/node_b"`) {
		t.Fatalf("New = %v, want the root refused", err)
	}
	_, err = New(context.Background(), Options{Endpoint: "/nonexistent/cri.sock", CgroupDriver: CgroupSystemd, CgroupRoot: "/" + strings.Repeat("a", 200)})
	if err == nil || !strings.Contains(err.Error(), "longer than systemd's") {
		t.Fatalf("New under systemd = %v, want the root refused", err)
	}
}
