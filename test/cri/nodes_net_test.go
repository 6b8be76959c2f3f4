package cri

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent"
	"github.com/kite-project/kite/agent/cni"
	"github.com/kite-project/kite/agent/imagegc"
	"github.com/kite-project/kite/agent/node"
	"github.com/kite-project/kite/agent/proxy"
	"github.com/kite-project/kite/agent/routes"
	"github.com/kite-project/kite/agent/runtime/containerd"
	"github.com/kite-project/kite/agent/runtime/cri"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// netnsChildEnv carries a netnsChild's work to the test binary run again
// inside a node's network namespace: the binary is then that node's
// agent (or its cleanup), not a test run.
const netnsChildEnv = "KITE_TEST_NETNS_CHILD"

// netnsChild is what the test binary does when run as a node.
type netnsChild struct {
	// Cleanup: start the node's containerd again and remove every
	// sandbox and container left, through the node's CNI; else run the
	// agent until SIGTERM.
	Cleanup bool
	Node    string
	Root    string
	// CgroupRoot is the node's own (--cgroup-root), as a host's agents
	// want: the nodes' QoS tiers stay apart.
	CgroupRoot string
	NodeIP     string
	Host       string
	CA, Cert   []byte
	Key        []byte
	Token      string
}

func init() {
	// Before TestMain: a node's process runs no tests and no server.
	if s := os.Getenv(netnsChildEnv); s != "" {
		var c netnsChild
		if err := json.Unmarshal([]byte(s), &c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := c.run(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

func (c netnsChild) run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if c.Cleanup {
		bin, err := cni.FindBinDir("")
		if err != nil {
			return err
		}
		p, err := containerd.Start(ctx, containerd.Options{Dir: filepath.Join(c.Root, "containerd"), CNIConfDir: filepath.Join(c.Root, "cni", "net.d"), CNIBinDir: bin})
		if err != nil {
			return err
		}
		defer p.Stop()
		rt, err := cri.New(ctx, cri.Options{Endpoint: p.Endpoint(), CgroupRoot: c.CgroupRoot})
		if err != nil {
			return err
		}
		defer rt.Close()
		return critest.RemoveAll(ctx, rt)
	}
	cfg := &rest.Config{Host: c.Host, BearerToken: c.Token, TLSClientConfig: rest.TLSClientConfig{CAData: c.CA, CertData: c.Cert, KeyData: c.Key}}
	a, err := agent.New(agent.Options{
		NodeName: c.Node, RESTConfig: cfg, RootDir: c.Root, ServerAddress: c.NodeIP, CgroupRoot: c.CgroupRoot,
		Node:             node.Options{NodeIP: net.ParseIP(c.NodeIP), UpdateInterval: 500 * time.Millisecond},
		ContainerRuntime: "containerd",
		ProxyMode:        agent.ProxyNFTables,
		Proxy:            proxy.Options{MinSyncPeriod: 50 * time.Millisecond},
		ImageGC:          &imagegc.Policy{HighThresholdPercent: 100, LowThresholdPercent: 100},
	})
	if err != nil {
		return err
	}
	a.Run(ctx)
	return nil
}

// netnsNode is a node whose agent (with its containerd, pod network,
// routes and service proxy) runs as a process of its own in a network
// namespace of the test's.
type netnsNode struct {
	name, ns, ip, root string
	cgroupRoot         string // the agent's --cgroup-root
	cmd                *exec.Cmd
	out                *lockedBuffer
	done               chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var netnsSeq atomic.Int64

// needNodeNetns skips t (fails it under KITE_REQUIRE_CRI) where nodes in
// namespaces cannot run: not root, or no ip, nsenter, nft, containerd or
// CNI plugins.
func needNodeNetns(t *testing.T) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	}
	for _, tool := range []string{"ip", "nsenter", "nft"} {
		if _, err := exec.LookPath(tool); err != nil && why == "" {
			why = "no " + tool
		}
	}
	if err := containerd.Available(""); err != nil && why == "" {
		why = err.Error()
	}
	if _, err := cni.FindBinDir(""); err != nil && why == "" {
		why = err.Error()
	}
	if why == "" {
		return
	}
	if os.Getenv(critest.RequireEnv) != "" {
		t.Fatalf("%s is set but %s", critest.RequireEnv, why)
	}
	t.Skipf("skipped: %s", why)
}

// ipCmd runs ip, failing t with its output.
func ipCmd(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// twoNodeNetns makes two namespaces joined by one link (one layer-2
// segment, which a host-gateway network needs), at 10.214.0.1 and
// 10.214.0.2, removed when the test ends.
func twoNodeNetns(t *testing.T) (ns [2]string, ip [2]string) {
	t.Helper()
	prefix := fmt.Sprintf("kx%d-%d", os.Getpid()%100000, netnsSeq.Add(1))
	for i := range 2 {
		ns[i], ip[i] = fmt.Sprintf("%s-n%d", prefix, i), fmt.Sprintf("10.214.0.%d", i+1)
		ipCmd(t, "netns", "add", ns[i])
		t.Cleanup(func() { ipCmd(t, "netns", "delete", ns[i]) })
		ipCmd(t, "-n", ns[i], "link", "set", "lo", "up")
	}
	ipCmd(t, "-n", ns[0], "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", ns[1])
	for i := range 2 {
		ipCmd(t, "-n", ns[i], "addr", "add", ip[i]+"/24", "dev", "eth0")
		ipCmd(t, "-n", ns[i], "link", "set", "eth0", "up")
	}
	return ns, ip
}

// inNetns runs f on an OS thread that joined namespace ns; the thread
// is never unlocked, so it ends with the goroutine and nothing else runs
// in ns. Sockets made in f stay in ns.
func inNetns(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("join %s: %w", ns, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// relayAPI listens on 127.0.0.1 inside ns and relays each connection to
// the shared server (on the machine's loopback), so that a node in ns
// reaches the API at an address its certificate names, and nothing else
// of the machine. It returns the URL to use inside ns.
func relayAPI(t *testing.T, ns string) string {
	t.Helper()
	target, err := url.Parse(shared.RESTConfig().Host)
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	if err := inNetns(ns, func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", target.Host)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, d)
			mu.Unlock()
			go func() { io.Copy(d, c); d.Close() }()
			go func() { io.Copy(c, d); c.Close() }()
		}
	}()
	return "https://" + ln.Addr().String()
}

// startNetnsNode runs node's agent in ns, with its node address ip, until
// the test ends (SIGTERM, then a cleanup run that removes what its
// containerd still has), and imports the test images into its
// containerd.
func startNetnsNode(t *testing.T, name, ns, ip string) *netnsNode {
	t.Helper()
	n := &netnsNode{name: name, ns: ns, ip: ip, root: t.TempDir(), out: &lockedBuffer{}, done: make(chan struct{})}
	rc := shared.RESTConfig()
	// A cgroup root of the node's (and this test binary's) own; removed
	// after the cleanup run removed the node's pods, so registered first.
	cgroupRoot := fmt.Sprintf("/kite/%s-%d", name, os.Getpid())
	n.cgroupRoot = cgroupRoot
	t.Cleanup(func() {
		if left := removeCgroupTree(cgroupRoot); len(left) > 0 {
			t.Errorf("node %s: cgroups left under %s: %q", name, cgroupRoot, left)
		}
	})
	child := netnsChild{Node: name, Root: n.root, CgroupRoot: cgroupRoot, NodeIP: ip, Host: relayAPI(t, ns), CA: rc.CAData, Cert: rc.CertData, Key: rc.KeyData, Token: rc.BearerToken}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	start := func(c netnsChild) *exec.Cmd {
		b, _ := json.Marshal(c)
		// nsenter joins the network namespace only: the agent keeps the
		// machine's mounts and cgroups, as a node's agent has its host's.
		cmd := exec.Command("nsenter", "--net=/run/netns/"+ns, "--", self)
		cmd.Env = append(os.Environ(), netnsChildEnv+"="+string(b))
		cmd.Stdout, cmd.Stderr = n.out, n.out
		return cmd
	}
	t.Cleanup(func() {
		cmd := start(netnsChild{Cleanup: true, Node: name, Root: n.root, CgroupRoot: cgroupRoot})
		if err := cmd.Run(); err != nil {
			t.Errorf("cleanup of node %s: %v\n%s", name, err, n.out)
		}
	})
	n.cmd = start(child)
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.cmd.Wait(); close(n.done) }()
	t.Cleanup(n.stop)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node %s's agent said:\n%s", name, n.out)
		}
	})
	sock := containerd.Socket(filepath.Join(n.root, "containerd"))
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: no containerd socket after a minute:\n%s", name, n.out)
		}
	}
	if err := critest.ImportTestImages(context.Background(), "unix://"+sock); err != nil {
		t.Fatal(err)
	}
	return n
}

// stop ends the agent (SIGTERM) and waits for it.
func (n *netnsNode) stop() {
	if n.cmd.Process == nil {
		return
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		n.cmd.Process.Kill()
		<-n.done
	}
}

// whoServer is a pod's shell command that serves, on 8080, a page saying
// the pod's hostname and the address the request came from (busybox
// httpd's CGI REMOTE_ADDR); with -f it stays in the foreground.
const whoServer = `mkdir -p /www/cgi-bin && printf '#!/bin/sh\necho Content-Type: text/plain\necho\necho "$(hostname) $REMOTE_ADDR"\n' > /www/cgi-bin/who && chmod +x /www/cgi-bin/who && httpd -p 8080 -h /www`

// TestPodsReachEachOtherAcrossNodesAndThroughServices runs two nodes,
// each an agent with its own containerd, pod network, routes and service
// proxy in a network namespace of its own, the two joined by one link.
// Each node routes the other's podCIDR through the other's address (a
// route a previous run left is removed at the start); a pod on node A
// then reaches, with its own address (not masqueraded), a pod on node B
// by pod IP and through a Service's ClusterIP that balances over pods on
// both nodes; it reaches the Service's NodePort on either node, and
// itself through a Service of its own (hairpin). Node B's route goes when
// its Node is deleted.
func TestPodsReachEachOtherAcrossNodesAndThroughServices(t *testing.T) {
	needNodeNetns(t)
	ctx := t.Context()
	ns, ips := twoNodeNetns(t)
	stale := netip.MustParsePrefix("10.239.250.0/24")
	ipCmd(t, "-n", ns[0], "route", "add", stale.String(), "via", ips[1], "proto", fmt.Sprint(routes.Protocol))
	names := [2]string{"xnode-a", "xnode-b"}
	var nodes [2]*netnsNode
	for i := range 2 {
		nodes[i] = startNetnsNode(t, names[i], ns[i], ips[i])
	}
	cs := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	t.Cleanup(func() {
		for _, name := range names {
			cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	var podCIDRs [2]string
	for i, a := range []*testAgent{{node: names[0], cs: cs}, {node: names[1], cs: cs}} {
		n := waitNode(t, a, func(n *v1.Node) bool {
			for _, c := range n.Status.Conditions {
				if c.Type == v1.NodeReady {
					return n.Spec.PodCIDR != "" && c.Status == v1.ConditionTrue
				}
			}
			return false
		})
		podCIDRs[i] = n.Spec.PodCIDR
	}
	routesOf := func(i int) string {
		return strings.TrimSpace(ipCmd(t, "-n", ns[i], "route", "show", "proto", fmt.Sprint(routes.Protocol)))
	}
	eventuallyTrue(t, 30*time.Second, "each node's route to the other's podCIDR", func() bool {
		return routesOf(0) == podCIDRs[1]+" via "+ips[1]+" dev eth0" && routesOf(1) == podCIDRs[0]+" via "+ips[0]+" dev eth0"
	}, func() string { return "A: " + routesOf(0) + "; B: " + routesOf(1) })

	a := &testAgent{node: names[0], cs: cs}
	b := &testAgent{node: names[1], cs: cs}
	server := func(on *testAgent, name string) *v1.Pod {
		return on.pod(t, name, func(p *v1.Pod) {
			p.Labels = map[string]string{"app": "web"}
			p.Spec.Containers[0].Args = []string{"sh", "-c", whoServer + " -f"}
		})
	}
	withIP := func(p *v1.Pod) bool { return running(p) && p.Status.PodIP != "" }
	serverA, serverB := server(a, "server-a"), server(b, "server-b")
	serverA, serverB = a.wait(t, serverA, "Running with an IP", withIP), b.wait(t, serverB, "Running with an IP", withIP)
	// Each node's pods are under its own cgroup root.
	for i, p := range []*v1.Pod{serverA, serverB} {
		want := cri.PodCgroupParent(cri.CgroupFS, nodes[i].cgroupRoot, string(p.UID), string(p.Status.QOSClass))
		if readCgroup(want, "cpu/cpu.shares", "cpu.weight") == "" {
			t.Errorf("%s: no pod cgroup %s under its node's root", p.Name, want)
		}
	}
	namespace := serverA.Namespace
	svc := func(name string, typ v1.ServiceType, selector map[string]string) *v1.Service {
		s, err := cs.CoreV1().Services(namespace).Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.ServiceSpec{
			Type: typ, Selector: selector,
			Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: v1.ProtocolTCP}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	web := svc("web", v1.ServiceTypeNodePort, map[string]string{"app": "web"})
	self := svc("self", v1.ServiceTypeClusterIP, map[string]string{"app": "client"})
	nodePort := fmt.Sprint(web.Spec.Ports[0].NodePort)
	ruleset := func() string {
		out, _ := exec.Command("ip", "netns", "exec", ns[0], "nft", "list", "table", "ip", proxy.TableName).CombinedOutput()
		return string(out)
	}
	eventuallyTrue(t, 30*time.Second, "node A's proxy rules with both of web's endpoints", func() bool {
		r := ruleset()
		return strings.Contains(r, serverA.Status.PodIP+" . 8080") && strings.Contains(r, serverB.Status.PodIP+" . 8080")
	}, ruleset)

	// The client asks, retrying while its own Service's endpoint (itself)
	// is being programmed, and reports in its termination message.
	script := whoServer + `
who() { printf 'GET /cgi-bin/who HTTP/1.0\r\n\r\n' | nc -w 2 $1 $2 2>/dev/null | tail -n 1; }
ask() { for i in $(seq 1 100); do a=$(who $1 $2); [ -n "$a" ] && { echo "$a"; return; }; sleep 0.2; done; echo none; }
{
echo "me $POD_IP"
echo "pod $(ask $B_POD 8080)"
for i in $(seq 1 12); do echo "svc $(ask $WEB 80)"; done
echo "nodeport-b $(ask $NODE_B $NODE_PORT)"
echo "nodeport-a $(ask $NODE_A $NODE_PORT)"
echo "self $(ask $SELF 80)"
} > /dev/termination-log`
	client := a.pod(t, "client-a", func(p *v1.Pod) {
		p.Labels = map[string]string{"app": "client"}
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		p.Spec.Containers[0].Args = []string{"sh", "-c", script}
		for k, v := range map[string]string{"B_POD": serverB.Status.PodIP, "WEB": web.Spec.ClusterIP, "NODE_A": ips[0], "NODE_B": ips[1], "NODE_PORT": nodePort, "SELF": self.Spec.ClusterIP} {
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Name: k, Value: v})
		}
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
	})
	client = a.wait(t, client, "its checks done", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
	})
	term := client.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 0 {
		t.Fatalf("client: %+v", client.Status.ContainerStatuses[0].State)
	}
	report := term.Message
	t.Logf("client-a on %s says:\n%s", names[0], report)
	answers := map[string][]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(report), "\n") {
		what, answer, _ := strings.Cut(line, " ")
		answers[what] = append(answers[what], answer)
	}
	// A pod that has ended has no podIP in its status: it says its own.
	clientIP := strings.Join(answers["me"], "")
	if ip, err := netip.ParseAddr(clientIP); err != nil || !netip.MustParsePrefix(podCIDRs[0]).Contains(ip) {
		t.Fatalf("client's own address %q, want one of node A's podCIDR %s", clientIP, podCIDRs[0])
	}
	// An answer is "<hostname> <address the server saw>"; the address
	// may be written as an IPv4-mapped IPv6 one.
	fromClient := func(answer string) bool {
		f := strings.Fields(answer)
		return len(f) == 2 && strings.TrimPrefix(strings.Trim(f[1], "[]"), "::ffff:") == clientIP
	}
	t.Run("a pod reaches a pod of another node by its IP, unmasqueraded", func(t *testing.T) {
		if got := answers["pod"]; len(got) != 1 || !strings.HasPrefix(got[0], "server-b ") || !fromClient(got[0]) {
			t.Errorf("answer of %s = %q, want server-b's, seeing the client's %s", serverB.Status.PodIP, got, clientIP)
		}
	})
	t.Run("a ClusterIP reaches endpoints on both nodes, unmasqueraded", func(t *testing.T) {
		seen := map[string]int{}
		for _, ans := range answers["svc"] {
			host, _, _ := strings.Cut(ans, " ")
			seen[host]++
			if !fromClient(ans) {
				t.Errorf("answer %q through the ClusterIP: the server saw another address than the client's %s", ans, clientIP)
			}
		}
		if seen["server-a"] == 0 || seen["server-b"] == 0 {
			t.Errorf("answers through %s = %v, want both servers", web.Spec.ClusterIP, seen)
		}
	})
	t.Run("a NodePort answers on either node", func(t *testing.T) {
		for _, what := range []string{"nodeport-a", "nodeport-b"} {
			if got := answers[what]; len(got) != 1 || !strings.HasPrefix(got[0], "server-") {
				t.Errorf("%s: answer %q, want a server's", what, got)
			}
		}
	})
	t.Run("a pod reaches itself through its own Service (hairpin)", func(t *testing.T) {
		if got := answers["self"]; len(got) != 1 || !strings.HasPrefix(got[0], "client-a ") {
			t.Errorf("answer through %s = %q, want client-a's own", self.Spec.ClusterIP, got)
		}
	})
	t.Run("a route a previous run left is gone", func(t *testing.T) {
		if r := routesOf(0); strings.Contains(r, stale.String()) {
			t.Errorf("node A's routes %q still have %s", r, stale)
		}
	})
	t.Run("a deleted node's route goes", func(t *testing.T) {
		b.deletePod(t, serverB)
		nodes[1].stop()
		if err := cs.CoreV1().Nodes().Delete(ctx, names[1], metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventuallyTrue(t, 30*time.Second, "node A without a route to B's podCIDR", func() bool { return routesOf(0) == "" },
			func() string { return routesOf(0) })
	})
	a.deletePod(t, serverA)
	a.deletePod(t, client)
}

// eventuallyTrue polls cond every 100 ms until it holds or d passes,
// then fails t with what state says.
func eventuallyTrue(t *testing.T, d time.Duration, what string, cond func() bool, state func() string) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v; now: %s", what, d, state())
		}
	}
}
