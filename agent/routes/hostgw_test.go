package routes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
)

var nsSeq atomic.Int64

// netns is a network namespace of the test's own with a link eth0 at
// 192.168.77.1/24 (a veth whose peer is in a second namespace), so that
// gateways of 192.168.77.0/24 are on-link; it skips without root, ip or
// nft.
func netns(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the host-gateway test needs network namespaces")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	name := fmt.Sprintf("krt%d-%d", os.Getpid()%100000, nsSeq.Add(1))
	for _, ns := range []string{name, name + "-peer"} {
		run("netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "delete", ns).Run() })
	}
	run("-n", name, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", name+"-peer")
	run("-n", name, "addr", "add", "192.168.77.1/24", "dev", "eth0")
	run("-n", name, "addr", "add", "fd00:77::1/64", "dev", "eth0", "nodad")
	run("-n", name, "link", "set", "eth0", "up")
	run("-n", name, "link", "set", "lo", "up")
	run("-n", name+"-peer", "link", "set", "eth0", "up")
	return name
}

func showRoutes(t *testing.T, ns string) []string {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "route", "show", "proto", fmt.Sprint(Protocol)).CombinedOutput()
	if err != nil {
		t.Fatalf("ip route show: %v: %s", err, out)
	}
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestSyncProgrammesTheNode applies plans in a namespace of its own with
// the real ip and nft: a route per other node, a route a previous run
// left removed at the first sync, a deleted node's route removed, a
// route someone deleted put back, the masquerade table loaded (every node's podCIDR in
// its set); routes of other protocols are left alone; Cleanup removes it
// all.
func TestSyncProgrammesTheNode(t *testing.T) {
	ns := netns(t)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// What a previous run left, and an administrator's route.
	ip("route", "add", "10.42.9.0/24", "via", "192.168.77.9", "proto", fmt.Sprint(Protocol))
	ip("route", "add", "10.50.0.0/24", "via", "192.168.77.50")
	_, ctx := ktesting.NewTestContext(t)
	h := &HostGateway{opts: Options{NodeName: "a", IP: []string{"ip", "-n", ns}, NFT: []string{"ip", "netns", "exec", ns, "nft"}}}
	a := node("a", []string{"10.42.0.0/24"}, "192.168.77.1")
	b := node("b", []string{"10.42.1.0/24"}, "192.168.77.2")
	c := node("c", []string{"10.42.2.0/24"}, "192.168.77.3")
	sync := func(nodes []*v1.Node, want ...string) {
		t.Helper()
		if res := h.Sync(ctx, nodes, false); res.Err != nil {
			t.Fatal(res.Err)
		}
		if got := showRoutes(t, ns); !slices.Equal(got, want) {
			t.Errorf("routes = %q, want %q", got, want)
		}
	}
	sync([]*v1.Node{a, b, c}, "10.42.1.0/24 via 192.168.77.2 dev eth0", "10.42.2.0/24 via 192.168.77.3 dev eth0")
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "ip", TableName).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ip saddr 10.42.0.0/24 ip daddr != @pod-cidrs ip daddr != 224.0.0.0/4 masquerade") ||
		!strings.Contains(string(out), "elements = { 10.42.0.0-10.42.2.255 }") {
		t.Errorf("masquerade table: %v\n%s", err, out)
	}
	t.Run("dual-stack: each family through its own gateway", func(t *testing.T) {
		a6 := node("a", []string{"10.42.0.0/24", "fd00:42::/64"}, "192.168.77.1", "fd00:77::1")
		b6 := node("b", []string{"10.42.1.0/24", "fd00:42:0:1::/64"}, "192.168.77.2", "fd00:77::2")
		sync([]*v1.Node{a6, b6, c}, "10.42.1.0/24 via 192.168.77.2 dev eth0", "10.42.2.0/24 via 192.168.77.3 dev eth0")
		out, err := exec.Command("ip", "-n", ns, "-6", "route", "show", "proto", fmt.Sprint(Protocol)).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "fd00:42:0:1::/64 via fd00:77::2 dev eth0") {
			t.Errorf("IPv6 routes: %v %q", err, out)
		}
		out, err = exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "ip6", TableName).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ip6 saddr fd00:42::/64 ip6 daddr != @pod-cidrs ip6 daddr != ff00::/8 masquerade") {
			t.Errorf("IPv6 masquerade table: %v\n%s", err, out)
		}
		// Back to IPv4 only: the IPv6 route and table go.
		sync([]*v1.Node{a, b, c}, "10.42.1.0/24 via 192.168.77.2 dev eth0", "10.42.2.0/24 via 192.168.77.3 dev eth0")
		if out, _ := exec.Command("ip", "-n", ns, "-6", "route", "show", "proto", fmt.Sprint(Protocol)).CombinedOutput(); len(strings.TrimSpace(string(out))) != 0 {
			t.Errorf("IPv6 routes left: %q", out)
		}
	})
	t.Run("a deleted node's route goes", func(t *testing.T) {
		sync([]*v1.Node{a, c}, "10.42.2.0/24 via 192.168.77.3 dev eth0")
	})
	t.Run("a route someone deleted comes back", func(t *testing.T) {
		ip("route", "del", "10.42.2.0/24")
		sync([]*v1.Node{a, c}, "10.42.2.0/24 via 192.168.77.3 dev eth0")
	})
	t.Run("a gateway off the link is an error, the other routes still go in", func(t *testing.T) {
		far := node("far", []string{"10.42.3.0/24"}, "172.31.0.1")
		res := h.Sync(ctx, []*v1.Node{a, c, far}, false)
		if res.Err == nil || !strings.Contains(res.Err.Error(), "10.42.3.0/24") {
			t.Errorf("error = %v, want one about 10.42.3.0/24", res.Err)
		}
		if got, want := showRoutes(t, ns), []string{"10.42.2.0/24 via 192.168.77.3 dev eth0"}; !slices.Equal(got, want) {
			t.Errorf("routes = %q, want %q", got, want)
		}
	})
	if err := h.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := showRoutes(t, ns); len(got) != 0 {
		t.Errorf("routes after Cleanup = %q", got)
	}
	out, _ = exec.Command("ip", "netns", "exec", ns, "nft", "list", "tables").CombinedOutput()
	if strings.Contains(string(out), TableName) {
		t.Errorf("tables after Cleanup: %s", out)
	}
	out, _ = exec.Command("ip", "-n", ns, "route", "show", "10.50.0.0/24").CombinedOutput()
	if !strings.Contains(string(out), "via 192.168.77.50") {
		t.Errorf("the administrator's route is gone: %q", out)
	}
}
