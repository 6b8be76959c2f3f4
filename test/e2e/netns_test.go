package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// hosts stands for a server host and two node hosts. Where the machine
// allows it (root, iproute2, nsenter) each is a network namespace of the
// test's own: the server's is joined to each node's by a veth pair, with
// addresses of 10.213.0.0/16 that exist only inside those namespaces, and
// each node routes by default through its link to the server, so that
// the agent finds its address as it would on a real host. Nothing is
// routed out of them, so no traffic leaves the machine. Elsewhere all
// three are the test's own namespace (Netns ""), on loopback.
type hosts struct {
	// Server is the server's namespace; ServerIP[i] is the server's
	// address as node i reaches it.
	Server   string
	ServerIP [2]string
	// Node[i] is node i's namespace and NodeIP[i] its address.
	Node   [2]string
	NodeIP [2]string
}

var hostsSeq atomic.Int64

// Isolated says whether the hosts are namespaces of their own.
func (h *hosts) Isolated() bool { return h.Server != "" }

// newHosts makes the namespaces, removed when the test ends, or returns
// loopback hosts, logging why, where they cannot be made.
func newHosts(t *testing.T) *hosts {
	t.Helper()
	loopback := &hosts{ServerIP: [2]string{"127.0.0.1", "127.0.0.1"}, NodeIP: [2]string{"127.0.0.1", "127.0.0.1"}}
	if os.Geteuid() != 0 {
		t.Log("not root: the nodes run on loopback, not in network namespaces")
		return loopback
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Logf("no %s: the nodes run on loopback, not in network namespaces", tool)
			return loopback
		}
	}
	// Unique per process and call: tests of other checkouts may run at
	// the same time, and -count runs this one again.
	prefix := fmt.Sprintf("kite%d-%d", os.Getpid()%100000, hostsSeq.Add(1))
	h := &hosts{Server: prefix + "-srv"}
	var made []string
	t.Cleanup(func() {
		for _, ns := range made {
			if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
				t.Errorf("ip netns delete %s: %v: %s", ns, err, out)
			}
		}
	})
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	steps := func() error {
		for _, ns := range []string{h.Server, prefix + "-n0", prefix + "-n1"} {
			if err := ip("netns", "add", ns); err != nil {
				return err
			}
			made = append(made, ns)
			if err := ip("-n", ns, "link", "set", "lo", "up"); err != nil {
				return err
			}
		}
		for i := range 2 {
			node := made[i+1]
			h.Node[i] = node
			h.ServerIP[i], h.NodeIP[i] = fmt.Sprintf("10.213.%d.1", i), fmt.Sprintf("10.213.%d.2", i)
			// Both ends are made inside the namespaces: the veth never
			// exists in the machine's own.
			srvEnd, nodeEnd := fmt.Sprintf("to-n%d", i), "eth0"
			for _, args := range [][]string{
				{"-n", h.Server, "link", "add", srvEnd, "type", "veth", "peer", "name", nodeEnd, "netns", node},
				{"-n", h.Server, "addr", "add", h.ServerIP[i] + "/24", "dev", srvEnd},
				{"-n", h.Server, "link", "set", srvEnd, "up"},
				{"-n", node, "addr", "add", h.NodeIP[i] + "/24", "dev", nodeEnd},
				{"-n", node, "link", "set", nodeEnd, "up"},
				{"-n", node, "route", "add", "default", "via", h.ServerIP[i]},
			} {
				if err := ip(args...); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := steps(); err != nil {
		t.Logf("network namespaces unavailable, the nodes run on loopback: %v", err)
		return loopback
	}
	return h
}
