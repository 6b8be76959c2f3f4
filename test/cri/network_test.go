package cri

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent"
	"github.com/kite-project/kite/agent/cni"
	"github.com/kite-project/kite/agent/runtime/containerd"
	"github.com/kite-project/kite/agent/runtime/cri"
	"github.com/kite-project/kite/agent/runtime/cri/critest"
)

// startChild runs an agent for node with a containerd of its own under
// root (--container-runtime=containerd) whose pods join bridge, with the
// test images imported. Its cleanups, which run after the agent's, remove
// whatever the test left in that containerd (through a containerd started
// again on its directories, with the same pod network, so that sandboxes
// are torn down through CNI) and then the bridge, so that nothing of the
// test stays in the host's network.
func startChild(t *testing.T, node, root, bridge string) *testAgent {
	t.Helper()
	critest.Runtime(t) // skips where containerd cannot run
	bin, err := cni.FindBinDir("")
	if err != nil {
		if os.Getenv(critest.RequireEnv) != "" {
			t.Fatalf("%s is set but %v", critest.RequireEnv, err)
		}
		t.Skipf("skipped: %v", err)
	}
	dir := filepath.Join(root, "containerd")
	ctx := context.Background()
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "link", "del", bridge).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find device") {
			t.Errorf("cleanup: ip link del %s: %v: %s", bridge, err, out)
		}
	})
	t.Cleanup(func() {
		p, err := containerd.Start(ctx, containerd.Options{Dir: dir, CNIConfDir: filepath.Join(root, "cni", "net.d"), CNIBinDir: bin})
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer p.Stop()
		rt, err := cri.New(ctx, cri.Options{Endpoint: p.Endpoint()})
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer rt.Close()
		if err := critest.RemoveAll(ctx, rt); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	a := startAgentWith(t, node, root, func(o *agent.Options) { o.ContainerRuntime, o.CNIBridge, o.PodRoutes = "containerd", bridge, "none" })
	if err := critest.ImportTestImages(ctx, "unix://"+containerd.Socket(dir)); err != nil {
		t.Fatal(err)
	}
	return a
}

// deletePod deletes the pod at once and waits until the API has it no
// more (the agent has stopped it).
func (a *testAgent) deletePod(t *testing.T, p *v1.Pod) {
	t.Helper()
	zero := int64(0)
	ctx := context.Background()
	if err := a.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := a.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s still there a minute after its deletion", p.Namespace, p.Name)
		}
	}
}

// TestPodsGetTheirOwnIPsAndReachEachOther: with containerd run by the
// agent and the node IPAM controller, the node gets a podCIDR and turns
// Ready once the agent's CNI configuration is loaded; two pods get
// distinct addresses of that podCIDR in status.podIP(s), with the node's
// hostIP, their own hostnames, and status.podIP in the downward API; one reaches the other's HTTP server
// over TCP; a hostNetwork pod has the node's address; a deleted pod's
// address is released (host-local's record of it goes).
func TestPodsGetTheirOwnIPsAndReachEachOther(t *testing.T) {
	root := t.TempDir()
	a := startChild(t, "cri-net", root, "kitecri0")
	n := waitNode(t, a, func(n *v1.Node) bool {
		for _, c := range n.Status.Conditions {
			if c.Type == v1.NodeReady {
				return n.Spec.PodCIDR != "" && c.Status == v1.ConditionTrue
			}
		}
		return false
	})
	podCIDR := netip.MustParsePrefix(n.Spec.PodCIDR)
	if !clusterCIDR.Contains(podCIDR.Addr()) || podCIDR.Bits() != 24 {
		t.Fatalf("node podCIDR %s; want a /24 of the cluster CIDR %s", podCIDR, clusterCIDR)
	}
	conf, err := os.ReadFile(filepath.Join(root, "cni", "net.d", cni.ConfigFile))
	if err != nil || !strings.Contains(string(conf), `"subnet": "`+podCIDR.String()+`"`) || !strings.Contains(string(conf), `"bridge": "kitecri0"`) {
		t.Fatalf("CNI configuration: %v\n%s", err, conf)
	}

	server := a.pod(t, "server", func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sh", "-c", "mkdir -p /www && echo hello from $(hostname) > /www/index.html && exec httpd -f -p 8080 -h /www"}
		p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 8080, HostPort: 38080}}
	})
	client := a.pod(t, "client", func(p *v1.Pod) {
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
		p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	})
	hostNet := a.pod(t, "hostnet", func(p *v1.Pod) {
		p.Spec.HostNetwork = true
		p.Spec.Containers[0].Args = []string{"sleep", "3600"}
	})
	withIP := func(p *v1.Pod) bool { return running(p) && p.Status.PodIP != "" }
	server, client, hostNet = a.wait(t, server, "Running with an IP", withIP), a.wait(t, client, "Running with an IP", withIP), a.wait(t, hostNet, "Running with an IP", withIP)
	for _, p := range []*v1.Pod{server, client} {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !podCIDR.Contains(ip) || ip == podCIDR.Addr().Next() {
			t.Errorf("pod %s: podIP %q; want a pod address of the node's podCIDR %s (not its gateway)", p.Name, p.Status.PodIP, podCIDR)
		}
		if len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != p.Status.PodIP || p.Status.HostIP != "127.0.0.1" {
			t.Errorf("pod %s: podIPs %v, hostIP %s; want [podIP] and the node's 127.0.0.1", p.Name, p.Status.PodIPs, p.Status.HostIP)
		}
	}
	if server.Status.PodIP == client.Status.PodIP {
		t.Errorf("both pods have %s", server.Status.PodIP)
	}
	if hostNet.Status.PodIP != "127.0.0.1" || hostNet.Status.HostIP != "127.0.0.1" {
		t.Errorf("hostNetwork pod: podIP %s hostIP %s; want the node's 127.0.0.1", hostNet.Status.PodIP, hostNet.Status.HostIP)
	}
	// nc with its own timeout: under sh, busybox runs its wget applet
	// directly, and Debian's busybox ignores wget's -T (scripts/images).
	var out string
	get := "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 " + server.Status.PodIP + " 8080"
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if out, err = a.exec(t, client, "sh", "-c", get); err == nil && strings.HasSuffix(out, "\r\n\r\nhello from server\n") {
			break
		}
	}
	if !strings.HasPrefix(out, "HTTP/1.") || !strings.HasSuffix(out, "\r\n\r\nhello from server\n") {
		t.Fatalf("client's GET of http://%s:8080/ over TCP = %q, %v; want the server pod's page", server.Status.PodIP, out, err)
	}
	if out, err := a.exec(t, client, "sh", "-c", "hostname; echo $POD_IP"); err != nil || out != "client\n"+client.Status.PodIP+"\n" {
		t.Errorf("client's hostname and $POD_IP (status.podIP) = %q, %v; want its pod name and %s", out, err, client.Status.PodIP)
	}

	// The hostPort (portmap) reaches the server from the node, at an
	// address of the node's other than loopback.
	if hostAddr := nodeAddress(t); hostAddr != "" {
		var body string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if body = httpGet("http://" + net.JoinHostPort(hostAddr, "38080") + "/"); body == "hello from server\n" {
				break
			}
		}
		if body != "hello from server\n" {
			t.Errorf("GET of the hostPort at %s:38080 = %q; want the server pod's page", hostAddr, body)
		}
	}

	record := filepath.Join(root, "cni", "networks", cni.NetworkName, server.Status.PodIP)
	if _, err := os.Stat(record); err != nil {
		t.Fatalf("host-local's record of the server's address: %v", err)
	}
	a.deletePod(t, server)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(record); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("address %s of the deleted pod not released: %s remains", server.Status.PodIP, record)
		}
	}
	a.deletePod(t, client)
	a.deletePod(t, hostNet)
}

// nodeAddress is an IPv4 address of the host's that is not loopback nor
// a pod bridge's, or "" (then the hostPort check is left out).
func nodeAddress(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !clusterCIDR.Contains(netip.MustParseAddr(n.IP.To4().String())) {
			return n.IP.String()
		}
	}
	return ""
}

// httpGet is the body of a GET of url, or the error's text.
func httpGet(url string) string {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
