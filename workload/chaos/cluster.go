package chaos

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kite-project/kite/storage/etcd/embedded"
)

// cluster is the processes under test and the proxy in front of the API.
type cluster struct {
	dir     string
	etcdURL string
	// etcdTLS are the files of the client certificate that kite etcd
	// made under its data dir: its only clients are the API server and
	// the runner's check of what etcd holds.
	etcdTLS embedded.TLSFiles
	etcd    *proc
	api     *proc
	agent   *proc
	proxy   *proxy
	node    string
	// direct reaches the API server without the proxy (the agent's view);
	// proxied goes through the proxy (the writers' and watchers' view).
	direct, proxied *rest.Config
}

// freePort returns a port on 127.0.0.1 nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startCluster(ctx context.Context, binary, dir, node string) (*cluster, error) {
	c := &cluster{dir: dir, node: node}
	ports := make([]int, 3)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return c, err
		}
		ports[i] = p
	}
	c.etcdURL = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	etcdDir := filepath.Join(dir, "etcd")
	c.etcdTLS = embedded.ClientTLSFiles(etcdDir)
	var err error
	if c.etcd, err = newProc("etcd", binary, filepath.Join(dir, "etcd.log"), "etcd",
		"--data-dir", etcdDir, "--listen-client-urls", c.etcdURL,
		"--listen-peer-urls", fmt.Sprintf("https://127.0.0.1:%d", ports[1]), "--unsafe-no-fsync"); err != nil {
		return c, err
	}
	if err := c.etcd.start(ctx); err != nil {
		return c, err
	}
	apiDir := filepath.Join(dir, "api")
	if c.api, err = newProc("apiserver", binary, filepath.Join(dir, "apiserver.log"), "apiserver",
		"--etcd-servers", c.etcdURL, "--etcd-cafile", c.etcdTLS.CAFile, "--etcd-certfile", c.etcdTLS.CertFile, "--etcd-keyfile", c.etcdTLS.KeyFile,
		"--data-dir", apiDir, "--secure-port", strconv.Itoa(ports[2]),
		"--etcd-compaction-interval", "10s"); err != nil {
		return c, err
	}
	if err := c.api.start(ctx); err != nil {
		return c, err
	}
	kubeconfig := filepath.Join(apiDir, "kubeconfig")
	if c.direct, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return c, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	c.direct.QPS, c.direct.Burst = -1, 0
	if c.proxy, err = newProxy(fmt.Sprintf("127.0.0.1:%d", ports[2])); err != nil {
		return c, err
	}
	c.proxied = rest.CopyConfig(c.direct)
	c.proxied.Host = "https://" + c.proxy.addr()
	if c.agent, err = newProc("agent", binary, filepath.Join(dir, "agent.log"), "agent",
		"--kubeconfig", kubeconfig, "--hostname-override", node, "--root-dir", c.agentRoot()); err != nil {
		return c, err
	}
	return c, c.agent.start(ctx)
}

func (c *cluster) agentRoot() string { return filepath.Join(c.dir, "agent") }

// close stops every process, the agent first, and kills what the agent's
// pods left: their supervisors (named by the agent's root dir) and
// processes (named by marker).
func (c *cluster) close(marker string) {
	for _, p := range []*proc{c.agent, c.api, c.etcd} {
		if p != nil {
			p.close()
		}
	}
	if c.proxy != nil {
		c.proxy.close()
	}
	killMatching("kite-supervisor " + c.agentRoot())
	killMatching(marker)
}

// pids are the processes whose command line contains pattern (as
// pgrep -f matches it; pattern must name this run alone).
func pids(pattern string) []int {
	out, _ := exec.Command("pgrep", "-f", "--", pattern).Output()
	var ps []int
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil {
			ps = append(ps, p)
		}
	}
	return ps
}

func killMatching(pattern string) {
	for range 3 {
		ps := pids(pattern)
		if len(ps) == 0 {
			return
		}
		for _, p := range ps {
			syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
