// Package cni is the pod network Kite gives the containerd it runs: a CNI
// configuration list of the standard plugins (Debian's
// containernetworking-plugins) that containerd's CRI plugin runs for
// every sandbox that is not in the node's network, as the kubelet with
// the bridge plugin (kubenet) and k3s do:
//
//   - bridge: a Linux bridge per node (DefaultBridge, kite0) that every
//     pod's veth joins; the bridge holds the gateway, the first address
//     of the node's podCIDR (isGateway), which is the pods' default route
//     (isDefaultGateway: the bridge plugin adds it, so host-local has no
//     routes, which would add it twice and fail with "file exists");
//     hairpinMode lets a pod reach itself through a Service address;
//     no ipMasq: the plugin's would masquerade whatever leaves the
//     node's podCIDR, other nodes' pods included; the agent masquerades
//     only what leaves the pod network (agent/routes);
//   - host-local IPAM: one address per sandbox from the node's podCIDR,
//     recorded as files under the agent's data dir, released when the
//     sandbox is torn down;
//   - portmap: the pods' hostPorts (DNAT on the node's addresses);
//   - loopback, which containerd runs itself for every sandbox's lo.
//
// The configuration is written once the node has its podCIDR (the node
// IPAM controller sets it), into a directory of the agent's that
// containerd watches. See docs/pod-network.md.
package cni

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DefaultBridge is the bridge pods join.
const DefaultBridge = "kite0"

// NetworkName names the network in the configuration (and host-local's
// directory of addresses under its data dir).
const NetworkName = "kite"

// ConfigFile is the configuration's name in the conf dir: containerd
// loads the first file by name, and Kite's directory has no other.
const ConfigFile = "10-kite.conflist"

// Plugins are the plugin binaries the configuration needs.
var Plugins = []string{"bridge", "host-local", "portmap", "loopback"}

// BinDirs are where the plugins are looked for without --cni-bin-dir:
// Debian's package, then the upstream tarball's place.
var BinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// Config is what the configuration is made of.
type Config struct {
	// Bridge is the bridge's name; "" is DefaultBridge.
	Bridge string
	// PodCIDRs are the node's spec.podCIDRs (one, or one per family).
	PodCIDRs []string
	// DataDir is where host-local records the addresses it gave.
	DataDir string
}

// Conflist is the configuration list (CNI spec 1.0.0, which containerd
// 1.6's libcni and the plugins 1.x speak).
func Conflist(c Config) ([]byte, error) {
	if len(c.PodCIDRs) == 0 {
		return nil, errors.New("cni: no podCIDR")
	}
	if c.DataDir == "" {
		return nil, errors.New("cni: no data dir for host-local")
	}
	bridge := c.Bridge
	if bridge == "" {
		bridge = DefaultBridge
	}
	var ranges [][]map[string]string
	for _, s := range c.PodCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("cni: podCIDR %q: %w", s, err)
		}
		ranges = append(ranges, []map[string]string{{"subnet": p.Masked().String()}})
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       NetworkName,
		"plugins": []any{
			map[string]any{
				"type":             "bridge",
				"bridge":           bridge,
				"isGateway":        true,
				"isDefaultGateway": true,
				"ipMasq":           false,
				"hairpinMode":      true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  ranges,
					"dataDir": c.DataDir,
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// Write writes the configuration into confDir (made if missing) as
// ConfigFile, by a rename, so that containerd, which watches the
// directory, never loads half a file.
func Write(confDir string, c Config) error {
	b, err := Conflist(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return fmt.Errorf("cni: %w", err)
	}
	path := filepath.Join(confDir, ConfigFile)
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("cni: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("cni: %w", err)
	}
	return nil
}

// FindBinDir is the directory with every plugin of Plugins: dir if given
// (--cni-bin-dir), else the first of BinDirs that has them.
func FindBinDir(dir string) (string, error) {
	dirs := BinDirs
	if dir != "" {
		dirs = []string{dir}
	}
	var missing []string
	for _, d := range dirs {
		missing = missing[:0]
		for _, p := range Plugins {
			if st, err := os.Stat(filepath.Join(d, p)); err != nil || st.IsDir() {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			return d, nil
		}
	}
	return "", fmt.Errorf("cni: the plugins %s are not in %s (install containernetworking-plugins, or give --cni-bin-dir)", strings.Join(Plugins, ", "), strings.Join(dirs, " or "))
}

// EnableForwarding turns on IP forwarding for the families of podCIDRs
// (net.ipv4.ip_forward, net.ipv6.conf.all.forwarding) if it is off, and
// says whether it changed anything. Pods reach beyond their node only
// through the node's forwarding; the bridge plugin would turn it on at
// the first pod too (isGateway), the agent does it first so that it is
// one visible, logged step of the agent's, as kube-proxy and the CNI
// plugins of other distributions do. Nothing else of the host's network
// configuration is touched.
func EnableForwarding(podCIDRs []string) ([]string, error) {
	var changed []string
	for _, s := range podCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return changed, fmt.Errorf("cni: podCIDR %q: %w", s, err)
		}
		path := "/proc/sys/net/ipv4/ip_forward"
		if p.Addr().Is6() {
			path = "/proc/sys/net/ipv6/conf/all/forwarding"
		}
		if ok, err := setSysctl(path); err != nil {
			return changed, err
		} else if ok {
			changed = append(changed, path)
		}
	}
	return changed, nil
}

// EnableBridgeNetfilter makes bridged traffic pass the IP hooks of
// netfilter (net.bridge.bridge-nf-call-iptables, and ip6tables for an
// IPv6 podCIDR), loading br_netfilter when its sysctls are missing, and
// says what it changed. Without it the answer of a pod that a Service
// address sent a pod of the same node goes back over the bridge without
// its address translated back, and the connection fails; the kubelet's
// kubenet and k3s do the same.
func EnableBridgeNetfilter(ctx context.Context, podCIDRs []string) ([]string, error) {
	const dir = "/proc/sys/net/bridge"
	if _, err := os.Stat(dir); err != nil {
		if out, err := exec.CommandContext(ctx, "modprobe", "br_netfilter").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("cni: modprobe br_netfilter: %w: %s", err, bytes.TrimSpace(out))
		}
	}
	var changed []string
	for _, s := range podCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return changed, fmt.Errorf("cni: podCIDR %q: %w", s, err)
		}
		path := dir + "/bridge-nf-call-iptables"
		if p.Addr().Is6() {
			path = dir + "/bridge-nf-call-ip6tables"
		}
		if ok, err := setSysctl(path); err != nil {
			return changed, err
		} else if ok {
			changed = append(changed, path)
		}
	}
	return changed, nil
}

// setSysctl writes 1 to path unless it holds 1, and says whether it did.
func setSysctl(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("cni: %w", err)
	}
	if strings.TrimSpace(string(b)) == "1" {
		return false, nil
	}
	if err := os.WriteFile(path, []byte("1"), 0o644); err != nil {
		return false, fmt.Errorf("cni: set %s: %w", path, err)
	}
	return true, nil
}
