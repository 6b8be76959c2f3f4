package agent

import (
	"fmt"
	"os"
	"os/exec"

	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/agent/options"
	"github.com/kite-project/kite/agent/proxy"
)

// The service proxy's modes (--proxy-mode).
const (
	ProxyNFTables = "nftables"
	ProxyNone     = "none"
)

// ProxyModeFor is the service proxy the options ask for. Empty (the
// default) means nftables where the proxy is wanted and can run: as root,
// with nft installed, and with the containerd runtime, whose pods have
// network namespaces (and addresses) of their own. With the process
// runtime pods share the host's network; `kite server` on a developer's
// machine then gets no rules in the host's nftables unless asked for.
func ProxyModeFor(o *options.Options) string {
	if o.ProxyMode != "" {
		return o.ProxyMode
	}
	cri := o.ContainerRuntime == "containerd" || o.ContainerRuntimeEndpoint != ""
	if _, err := exec.LookPath("nft"); err != nil || !cri || os.Geteuid() != 0 {
		return ProxyNone
	}
	return ProxyNFTables
}

// newProxy builds the service proxy opts ask for, if any.
func newProxy(opts Options, cs *kubernetes.Clientset) (*proxy.Proxy, error) {
	switch opts.ProxyMode {
	case "", ProxyNone:
		return nil, nil
	case ProxyNFTables:
	default:
		return nil, fmt.Errorf("agent: --proxy-mode %q: must be %s or %s", opts.ProxyMode, ProxyNFTables, ProxyNone)
	}
	if cs == nil {
		return nil, fmt.Errorf("agent: --proxy-mode %s needs the API server (--kubeconfig)", opts.ProxyMode)
	}
	po := opts.Proxy
	po.Client, po.NodeName = cs, opts.NodeName
	p, err := proxy.New(po)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return p, nil
}
