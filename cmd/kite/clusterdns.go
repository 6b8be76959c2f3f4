package main

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/spf13/pflag"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/agent/options"
	"github.com/kite-project/kite/controllers/clusterdns"
)

// Values of --cluster-dns-addr besides host:port.
const (
	clusterDNSAuto = "auto"
	clusterDNSNone = "none"
	// clusterDNSUnprivilegedPort is the automatic address's port when
	// the process may not bind 53.
	clusterDNSUnprivilegedPort = 10053
)

// clusterDNSFlags choose where the cluster DNS serves (docs/dns.md).
type clusterDNSFlags struct {
	addr, metricsAddr string
}

func (f *clusterDNSFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.metricsAddr, "cluster-dns-metrics-addr", clusterDNSAuto, "host:port the cluster DNS serves Prometheus metrics on (/metrics, CoreDNS's names; the kube-dns Service's metrics port); 'auto': the DNS's host on port 9153, left out when that is taken; 'none': no metrics")
	fs.StringVar(&f.addr, "cluster-dns-addr", clusterDNSAuto, "host:port the cluster DNS serves on over UDP and TCP (the kube-dns Service's endpoint); 'auto': the node's address (--bind-address, or the address of the default route's interface) on port 53 as root, 10053 otherwise, and without cluster DNS when that is taken; 'none': no cluster DNS")
}

// apply puts the flag into opts, with domain the cluster domain.
func (f *clusterDNSFlags) apply(opts *kite.Options, domain string) error {
	switch f.addr {
	case clusterDNSNone, "":
		return nil
	case clusterDNSAuto:
		opts.ClusterDNS = kite.ClusterDNSOptions{Addr: autoClusterDNSAddr(opts.BindAddress, os.Geteuid() == 0), Domain: domain, Optional: true}
	default:
		if _, _, err := net.SplitHostPort(f.addr); err != nil {
			return fmt.Errorf("--cluster-dns-addr %q: %w", f.addr, err)
		}
		opts.ClusterDNS = kite.ClusterDNSOptions{Addr: f.addr, Domain: domain}
	}
	switch f.metricsAddr {
	case clusterDNSNone, "":
	case clusterDNSAuto:
		host, _, _ := net.SplitHostPort(opts.ClusterDNS.Addr)
		opts.ClusterDNS.MetricsAddr = net.JoinHostPort(host, strconv.Itoa(clusterdns.DefaultMetricsPort))
		opts.ClusterDNS.MetricsOptional = true
	default:
		if _, _, err := net.SplitHostPort(f.metricsAddr); err != nil {
			return fmt.Errorf("--cluster-dns-metrics-addr %q: %w", f.metricsAddr, err)
		}
		opts.ClusterDNS.MetricsAddr = f.metricsAddr
	}
	return nil
}

// autoClusterDNSAddr is the automatic address: the bind address when it
// is one other than loopback, else the host's (kube-apiserver's choice of
// the address it advertises), else 127.0.0.1; port 53 as root, else
// clusterDNSUnprivilegedPort.
func autoClusterDNSAddr(bind string, root bool) string {
	port := 53
	if !root {
		port = clusterDNSUnprivilegedPort
	}
	host := "127.0.0.1"
	ip := net.ParseIP(bind)
	if ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() {
		host = ip.String()
	} else if h, err := utilnet.ResolveBindAddress(ip); err == nil {
		host = h.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// agentClusterDNS makes the agent beside the server use the kube-dns
// Service of the server's service range, unless it was told another
// cluster DNS.
func agentClusterDNS(agentDNS []string, opts kite.Options) ([]string, error) {
	if len(agentDNS) != 1 || agentDNS[0] != options.DefaultClusterDNS || len(opts.ServiceClusterIPRanges) == 0 {
		return agentDNS, nil
	}
	ip, err := clusterdns.ServiceIP(opts.ServiceClusterIPRanges[0])
	if err != nil {
		return nil, fmt.Errorf("--service-cluster-ip-range: %w", err)
	}
	return []string{ip}, nil
}
