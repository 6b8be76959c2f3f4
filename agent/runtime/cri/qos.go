package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kite-project/kite/agent/runtime"
)

// The pod cgroups are laid out as the kubelet's with cgroupsPerQOS (its
// default): a Guaranteed pod's directly under kubepods, a Burstable or
// BestEffort pod's under the tier of its class, whose cpu shares the
// agent keeps current (UpdateQOSCgroups). kubepods is under the agent's
// cgroup root (--cgroup-root, the kubelet's flag; DefaultCgroupRoot,
// /kite, unless told), so that a kubelet on the same host keeps its
// /kubepods and two agents on one host given roots of their own keep
// their tiers apart. With the default root:
//
//	cgroupfs: /kite/kubepods/pod<uid>
//	          /kite/kubepods/burstable/pod<uid>
//	          /kite/kubepods/besteffort/pod<uid>
//	systemd:  kite-kubepods-pod<uid>.slice
//	          kite-kubepods-burstable-pod<uid>.slice
//	          kite-kubepods-besteffort-pod<uid>.slice
//
// and with --cgroup-root=/kite/node-b /kite/node-b/kubepods/... and
// kite-node_b-kubepods-....slice. systemd nests a slice in the slice its
// name's prefix before the last dash names, so
// kite-kubepods-burstable-pod<uid>.slice is
// kite.slice/kite-kubepods.slice/kite-kubepods-burstable.slice/...: the
// kubelet's names with its root's components in front (the kubelet's
// cgroupName.ToSystemd), each with its dashes as underscores, as the
// kubelet escapes them (a pod's uid too). Agents before this layout put
// every pod's cgroup at /kite/pod<uid> (kite-pod<uid>.slice): such pods,
// adopted after an upgrade, keep theirs (podCgroupOf), whatever the root.

// DefaultCgroupRoot is the agent's cgroup root when none is given.
const DefaultCgroupRoot = "/kite"

// legacyRoot is where agents before the QoS tiers put every pod cgroup,
// whatever the root is now: the root was fixed then.
var legacyRoot = []string{"kite"}

// maxSliceName is systemd's longest unit name (UNIT_NAME_MAX less its NUL).
const maxSliceName = 255

// podUIDLen is a pod uid's length (a UUID's).
const podUIDLen = 36

// ValidateCgroupRoot checks a cgroup root (--cgroup-root, cgroupRoot) in
// the kubelet's form, a cgroupfs path: absolute, "/" or components below
// it. Empty is DefaultCgroupRoot. A component is refused where the
// kubelet's names would go wrong: empty (a doubled or trailing slash),
// "." or "..", with characters systemd does not take in a unit name
// unescaped, or with an underscore (the kubelet forbids it in its cgroup
// names: under systemd a component's dashes become underscores, so
// node_b and node-b would name the same slices).
func ValidateCgroupRoot(root string) error {
	if root == "" || root == "/" {
		return nil
	}
	if !strings.HasPrefix(root, "/") {
		return fmt.Errorf("cgroup root %q: want an absolute cgroupfs path such as /kite or /kite/node-b", root)
	}
	for _, c := range strings.Split(root[1:], "/") {
		switch {
		case c == "":
			return fmt.Errorf("cgroup root %q: empty component (a doubled or trailing slash)", root)
		case c == "." || c == "..":
			return fmt.Errorf("cgroup root %q: component %q", root, c)
		case strings.Contains(c, "_"):
			return fmt.Errorf("cgroup root %q: component %q has an underscore, which the systemd cgroup driver uses for a dash", root, c)
		case len(c) > maxSliceName:
			return fmt.Errorf("cgroup root %q: component longer than %d bytes", root, maxSliceName)
		}
		for _, r := range c {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == ':') {
				return fmt.Errorf("cgroup root %q: component %q has %q; want letters, digits, '-', '.' or ':'", root, c, r)
			}
		}
	}
	return nil
}

// validateRootForDriver checks what ValidateCgroupRoot cannot without the
// driver: under systemd the longest pod slice's name must fit a unit name.
func validateRootForDriver(driver CgroupDriver, root []string) error {
	if driver != CgroupSystemd {
		return nil
	}
	longest := systemdName(podComponents(root, strings.Repeat("0", podUIDLen), qosBestEffort))
	if len(longest) > maxSliceName {
		return fmt.Errorf("cgroup root /%s: its pods' systemd slices would be %d bytes, longer than systemd's %d", strings.Join(root, "/"), len(longest), maxSliceName)
	}
	return nil
}

// rootComponents are a valid cgroup root's components, as the kubelet's
// ParseCgroupfsToCgroupName: none for "/", DefaultCgroupRoot's for "".
func rootComponents(root string) []string {
	if root == "" {
		root = DefaultCgroupRoot
	}
	root = strings.TrimPrefix(root, "/")
	if root == "" {
		return nil
	}
	return strings.Split(root, "/")
}

// The QoS classes, as v1.PodQOSClass spells them.
const (
	qosGuaranteed = "Guaranteed"
	qosBurstable  = "Burstable"
	qosBestEffort = "BestEffort"
)

// tierComponents are the cgroup names from the top down to the tier of a
// QoS class under root: kubepods itself for Guaranteed (and an unknown
// class, which the kubelet never has), kubepods/<class lowercased> for
// the others.
func tierComponents(root []string, class string) []string {
	out := append(slices.Clip(root), "kubepods")
	switch class {
	case qosBurstable, qosBestEffort:
		out = append(out, strings.ToLower(class))
	}
	return out
}

// podComponents are the cgroup names of pod uid of class under root.
func podComponents(root []string, uid, class string) []string {
	return append(tierComponents(root, class), "pod"+uid)
}

// systemdName is the slice of a cgroup name under the systemd driver: its
// components joined by dashes (each with its dashes as underscores), as
// the kubelet's cgroupName.ToSystemd.
func systemdName(components []string) string {
	escaped := make([]string, len(components))
	for i, c := range components {
		escaped[i] = strings.ReplaceAll(c, "-", "_")
	}
	return strings.Join(escaped, "-") + ".slice"
}

// cgroupfsName is the cgroupfs path of a cgroup name.
func cgroupfsName(components []string) string { return "/" + strings.Join(components, "/") }

// cgroupName is a cgroup name under the driver.
func cgroupName(driver CgroupDriver, components []string) string {
	if driver == CgroupSystemd {
		return systemdName(components)
	}
	return cgroupfsName(components)
}

// PodCgroupParent is the cgroup parent of the sandbox of pod uid of QoS
// class class (Guaranteed, Burstable or BestEffort) under the driver and
// the cgroup root root (cgroupfs form; empty is DefaultCgroupRoot), which
// ValidateCgroupRoot accepts.
func PodCgroupParent(driver CgroupDriver, root, uid, class string) string {
	return podCgroupParent(driver, rootComponents(root), uid, class)
}

func podCgroupParent(driver CgroupDriver, root []string, uid, class string) string {
	return cgroupName(driver, podComponents(root, uid, class))
}

// tierParent is the cgroup of the tier of class under the driver and root.
func tierParent(driver CgroupDriver, root []string, class string) string {
	return cgroupName(driver, tierComponents(root, class))
}

// legacyCgroupParent is where agents before the QoS tiers put the pod's
// cgroup: /kite/pod<uid>, kite-pod<uid>.slice, whatever the root now.
func legacyCgroupParent(driver CgroupDriver, uid string) string {
	return cgroupName(driver, append(slices.Clip(legacyRoot), "pod"+uid))
}

// podCgroupCandidates are every cgroup parent pod uid may have: its class's
// tier under root, or the older layout's.
func podCgroupCandidates(driver CgroupDriver, root []string, uid string) []string {
	return []string{podCgroupParent(driver, root, uid, qosGuaranteed), podCgroupParent(driver, root, uid, qosBurstable),
		podCgroupParent(driver, root, uid, qosBestEffort), legacyCgroupParent(driver, uid)}
}

// cgroupPath is the path below a hierarchy's mount point of a cgroup
// parent: itself under cgroupfs; under systemd the slice expanded into
// the slices it nests in (a-b-c.slice is /a.slice/a-b.slice/a-b-c.slice),
// as runc's ExpandSlice.
func cgroupPath(driver CgroupDriver, parent string) string {
	if driver != CgroupSystemd {
		return parent
	}
	name, ok := strings.CutSuffix(parent, ".slice")
	if !ok || name == "" {
		return "/" + parent
	}
	var path, prefix string
	for _, part := range strings.Split(name, "-") {
		if prefix != "" {
			prefix += "-"
		}
		prefix += part
		path += "/" + prefix + ".slice"
	}
	return path
}

// cgroupV2 says whether the host's cgroups are the unified hierarchy.
var cgroupV2 = sync.OnceValue(func() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
})

// cgroupExists says whether the cgroup parent exists on the host: in the
// unified hierarchy (v2) or v1's cpu one, where runc makes every pod
// cgroup.
func cgroupExists(driver CgroupDriver, parent string) bool {
	dir := filepath.Join("/sys/fs/cgroup", cgroupPath(driver, parent))
	if !cgroupV2() {
		dir = filepath.Join("/sys/fs/cgroup", "cpu", cgroupPath(driver, parent))
	}
	_, err := os.Stat(dir)
	return err == nil
}

// podCgroupOf is the cgroup parent that pod uid's cgroup has on the host:
// given when it exists or none does, else the first candidate that does
// (a pod of an older agent's layout, adopted after an upgrade, keeps its
// cgroup: a container made in it again must go beside its sandbox).
func (r *Runtime) podCgroupOf(uid, given string) string {
	if uid == "" || given != "" && cgroupExists(r.driver, given) {
		return given
	}
	for _, c := range podCgroupCandidates(r.driver, r.root, uid) {
		if cgroupExists(r.driver, c) {
			return c
		}
	}
	return given
}

var _ runtime.QOSCgroups = (*Runtime)(nil)

// PodCgroupParent is the cgroup parent of a pod's sandbox of the class,
// under the runtime's driver and cgroup root.
func (r *Runtime) PodCgroupParent(uid, class string) string {
	return podCgroupParent(r.driver, r.root, uid, class)
}

// UpdateQOSCgroups gives the tiers their cpu shares (the kubelet's
// qosContainerManager.UpdateCgroups), making them where they are not yet,
// before any pod of theirs is: v1's cpu.shares, or v2's cpu.weight of
// them (the kubelet's conversion) with the controllers enabled down to
// the tiers, as runc enables them on its way to a cgroup. Guaranteed pods
// have no tier (kubepods itself), so nothing is written for them; the
// tiers' huge pages stay unlimited as a new cgroup's are. Only the
// cgroupfs driver is written, as setPodCgroup: under systemd the slices
// are systemd's, which writes their files itself.
func (r *Runtime) UpdateQOSCgroups(ctx context.Context, tiers runtime.QOSTiers) error {
	if r.driver != CgroupFS {
		return nil
	}
	r.qosMu.Lock()
	defer r.qosMu.Unlock()
	var errs []error
	for _, w := range qosTierWrites(tiers, cgroupV2()) {
		if err := writeTier(tierParent(r.driver, r.root, w.class), w.file, w.value); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// tierWrite is a file of a tier and its value.
type tierWrite struct{ class, file, value string }

// qosTierWrites are the files of the tiers and their values, v1 or v2.
func qosTierWrites(t runtime.QOSTiers, v2 bool) []tierWrite {
	shares := []struct {
		class  string
		shares int64
	}{{qosBurstable, t.BurstableCPUShares}, {qosBestEffort, t.BestEffortCPUShares}}
	var out []tierWrite
	for _, s := range shares {
		if s.shares <= 0 {
			continue
		}
		if v2 {
			out = append(out, tierWrite{s.class, "cpu.weight", strconv.FormatUint(cpuWeight(uint64(s.shares)), 10)})
		} else {
			out = append(out, tierWrite{s.class, "cpu.shares", strconv.FormatInt(s.shares, 10)})
		}
	}
	return out
}

// writeTier makes the tier's cgroup where missing and writes file. On v1
// the tier is made in the cpu hierarchy, whose file it writes; runc makes
// it in the others on its way to a pod's cgroup.
func writeTier(tier, file, value string) error {
	if cgroupV2() {
		dir := filepath.Join("/sys/fs/cgroup", tier)
		if err := makeV2(dir); err != nil {
			return fmt.Errorf("tier cgroup %s: %w", tier, err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
			return fmt.Errorf("tier cgroup %s: %w", tier, err)
		}
		return nil
	}
	dir := filepath.Join("/sys/fs/cgroup", "cpu", tier)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tier cgroup %s: %w", tier, err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("tier cgroup %s: %w", tier, err)
	}
	return nil
}

// makeV2 makes dir in the unified hierarchy with each of its parents
// below the root delegating their controllers to it (cgroup.subtree_control),
// as runc's CreateCgroupPath: a child has only the controllers its parent
// enabled.
func makeV2(dir string) error {
	rel, err := filepath.Rel("/sys/fs/cgroup", dir)
	if err != nil {
		return err
	}
	cur := "/sys/fs/cgroup"
	for _, part := range strings.Split(rel, "/") {
		controllers, err := os.ReadFile(filepath.Join(cur, "cgroup.controllers"))
		if err != nil {
			return err
		}
		var enable []string
		for _, c := range strings.Fields(string(controllers)) {
			enable = append(enable, "+"+c)
		}
		if len(enable) > 0 {
			// Best effort, as runc: a controller the parent cannot
			// delegate (a threaded one) is left out by the kernel's
			// refusal of the whole write, so try one at a time.
			if err := os.WriteFile(filepath.Join(cur, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0); err != nil {
				for _, e := range enable {
					os.WriteFile(filepath.Join(cur, "cgroup.subtree_control"), []byte(e), 0)
				}
			}
		}
		cur = filepath.Join(cur, part)
		if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return nil
}
