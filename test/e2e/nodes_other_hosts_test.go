package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestNodesOnOtherHosts runs "kite apiserver" on one host and "kite agent"
// on two others (network namespaces of the test's own where the machine
// allows it, see newHosts). The server names the addresses the nodes
// reach it by with --tls-san; each agent verifies it through a copy of
// the admin kubeconfig pointed at that address, as a user on that host
// would make it, and so does kubectl there. Each node reports the
// address of its default route's interface as its InternalIP, both are
// Ready, and the scheduler spreads pods over the two.
func TestNodesOnOtherHosts(t *testing.T) {
	needKubectl(t)
	t.Parallel()
	h := newHosts(t)
	if h.Isolated() {
		t.Logf("server in network namespace %s, nodes in %s and %s", h.Server, h.Node[0], h.Node[1])
	}
	root := supervisedDir(t)
	dir := filepath.Join(root, "data")
	args := []string{"apiserver", "--data-dir", dir, "--secure-port=0", "--unsafe-no-fsync", testGraceFlag}
	if h.Isolated() {
		args = append(args, "--bind-address", "0.0.0.0", "--tls-san", h.ServerIP[0], "--tls-san", h.ServerIP[1])
	}
	api := StartKiteIn(t, h.Server, args...)
	admin := filepath.Join(dir, "kubeconfig")
	config := agentConfig(t)

	nodes := [2]string{"far-a", "far-b"}
	var agents [2]*Kite
	for i, node := range nodes {
		kubeconfig := kubeconfigFor(t, admin, h.ServerIP[i])
		args := []string{"agent", "--kubeconfig", kubeconfig, "--hostname-override", node, "--config", config,
			"--root-dir", filepath.Join(root, node)}
		if !h.Isolated() {
			// One host: the agents differ by port only.
			args = append(args, "--node-ip", "127.0.0.1", "--port", fmt.Sprint(10270+i))
		}
		agents[i] = StartKiteIn(t, h.Node[i], args...)
		// kubectl on the node's host verifies the server by the same name.
		if out, err := tryKubectlIn(t, h.Node[i], kubeconfig, "get", "--raw", "/version"); err != nil || !strings.Contains(out, "gitVersion") {
			t.Errorf("kubectl on the host of %s through https://%s: %v\n%s", node, h.ServerIP[i], err, out)
		}
	}
	for i, node := range nodes {
		waitNodeReady(t, h.Server, admin, node, "True")
		if got := getIn(t, h.Server, admin, `{.status.addresses[?(@.type=="InternalIP")].address}`, "node", node); got != h.NodeIP[i] {
			t.Errorf("node %s InternalIP %q, want %s, the address of its host", node, got, h.NodeIP[i])
		}
	}
	if out := kubectlIn(t, h.Server, admin, "get", "nodes"); strings.Count(out, " Ready ") != 2 {
		t.Errorf("kubectl get nodes, want both Ready:\n%s", out)
	}

	// Four pods, each requesting the same: least allocated places them
	// two and two.
	var markers []string
	for i := range 4 {
		m := newMarker(t)
		markers = append(markers, m)
		applyIn(t, h.Server, admin, sleeperPod(podSpec{name: fmt.Sprintf("spread-%d", i), marker: m, cpu: "100m"}))
	}
	perNode := map[string]int{}
	eventually(t, "the four pods are not all Running", func() bool {
		out := getIn(t, h.Server, admin, `{range .items[*]}{.status.phase} {.spec.nodeName}{"\n"}{end}`, "pods")
		clear(perNode)
		for line := range strings.SplitSeq(out, "\n") {
			if phase, node, _ := strings.Cut(line, " "); phase == "Running" {
				perNode[node]++
			}
		}
		return perNode[nodes[0]]+perNode[nodes[1]] == 4
	})
	if perNode[nodes[0]] != 2 || perNode[nodes[1]] != 2 {
		t.Errorf("pods per node %v, want two on each", perNode)
	}
	kubectlIn(t, h.Server, admin, "delete", "pods", "--all", "--wait=true", "--timeout=30s")
	for _, m := range markers {
		if n := markerProcesses(m); n != 0 {
			t.Errorf("after the delete, %d processes run %q", n, m)
		}
	}
	for _, a := range agents {
		stopAgent(t, a)
	}
	stopCleanly(t, api, syscall.SIGTERM)
}
