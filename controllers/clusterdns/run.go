// Package clusterdns is the cluster's DNS server, as the Kubernetes
// DNS-based service discovery specification (github.com/kubernetes/dns,
// docs/specification.md) and CoreDNS's kubernetes plugin answer it:
// <svc>.<ns>.svc.<zone> (A/AAAA: the cluster IPs, or a headless
// Service's ready endpoints; CNAME for an ExternalName Service),
// <endpoint>.<svc>.<ns>.svc.<zone> of headless Services,
// _<port>._<proto>.<svc>.<ns>.svc.<zone> (SRV), <a-b-c-d>.<ns>.pod.<zone>,
// PTR of cluster IPs and headless endpoints, dns-version.<zone> (TXT);
// NXDOMAIN and NODATA with the zone's SOA; other names forwarded to the
// host's resolvers. docs/dns.md says more.
//
// The decision is Index.Lookup, a function of an index of Services and
// EndpointSlices; DNS (New, Run) fills the index from informers and
// serves it over UDP and TCP with github.com/miekg/dns, with a cache of
// the upstreams' answers and CoreDNS's metrics.
package clusterdns

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/listwatch"
)

// DefaultDomain is the cluster domain (--cluster-domain).
const DefaultDomain = "cluster.local"

// DefaultResolvConf is where the host's resolvers are read from.
const DefaultResolvConf = "/etc/resolv.conf"

// Options configure a DNS.
type Options struct {
	// Client watches Services and EndpointSlices. Required.
	Client kubernetes.Interface
	// Domain is the cluster domain; "" is DefaultDomain.
	Domain string
	// Addr is host:port to serve on (port 0: a free one). Required.
	Addr string
	// Upstreams are the resolvers (host:port) names outside the zone are
	// forwarded to; nil means the nameservers of ResolvConf, empty (not
	// nil) none: such queries are REFUSED.
	Upstreams []string
	// ResolvConf is the host's resolver configuration; "" is
	// DefaultResolvConf.
	ResolvConf string
	// CacheSize bounds the cache of forwarded answers (entries); zero is
	// DefaultCacheSize, negative keeps none.
	CacheSize int
	// MetricsAddr is host:port to serve Prometheus metrics on, with
	// CoreDNS's names (port DefaultMetricsPort is kube-dns's "metrics");
	// "" serves none.
	MetricsAddr string
}

// DNS is the cluster DNS server and the informers that feed it.
type DNS struct {
	index    *Index
	server   *Server
	services *informer.Informer[*v1.Service]
	slices   *informer.Informer[*discoveryv1.EndpointSlice]
}

// New opens the server's address and builds its informers; Run serves.
func New(opts Options) (*DNS, error) {
	if opts.Client == nil || opts.Addr == "" {
		return nil, fmt.Errorf("clusterdns: a client and an address are required")
	}
	domain := opts.Domain
	if domain == "" {
		domain = DefaultDomain
	}
	if _, ok := dns.IsDomainName(domain); !ok {
		return nil, fmt.Errorf("clusterdns: cluster domain %q is not a domain name", domain)
	}
	upstreams := opts.Upstreams
	if upstreams == nil {
		upstreams = HostUpstreams(opts.ResolvConf)
	}
	d := &DNS{index: NewIndex(domain)}
	var err error
	d.services, err = indexing("services", listwatch.FromTypedClient[*v1.ServiceList](opts.Client.CoreV1().Services(""), nil), d.index.SetService, d.index.DeleteService)
	if err != nil {
		return nil, err
	}
	d.slices, err = indexing("endpointslices", listwatch.FromTypedClient[*discoveryv1.EndpointSliceList](opts.Client.DiscoveryV1().EndpointSlices(""), nil), d.index.SetSlice, d.index.DeleteSlice)
	if err != nil {
		return nil, err
	}
	if d.server, err = Listen(opts.Addr, d.index, ServerOptions{Upstreams: upstreams, CacheSize: opts.CacheSize, MetricsAddr: opts.MetricsAddr}); err != nil {
		return nil, err
	}
	return d, nil
}

// indexing is an informer of every object of lw that puts each change
// into the index.
func indexing[T runtime.Object](name string, lw listwatch.ListerWatcher, set, del func(T)) (*informer.Informer[T], error) {
	i, err := informer.New(informer.Options[T]{Name: name, ListerWatcher: lw,
		Handlers: informer.Handlers[T]{OnAdd: set, OnUpdate: func(_, obj T) { set(obj) }, OnDelete: del}})
	if err != nil {
		return nil, fmt.Errorf("clusterdns: %w", err)
	}
	return i, nil
}

// Addr is the address served (host:port).
func (d *DNS) Addr() string { return d.server.Addr() }

// MetricsAddr is the address the metrics are served on, "" for none.
func (d *DNS) MetricsAddr() string { return d.server.MetricsAddr() }

// HasSynced says whether both informers have their first list.
func (d *DNS) HasSynced() bool { return d.services.HasSynced() && d.slices.HasSynced() }

// Run watches and serves until ctx ends, and returns once everything it
// started has stopped.
func (d *DNS) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("cluster-dns")
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	wg.Go(func() { d.services.Run(ctx) })
	wg.Go(func() { d.slices.Run(ctx) })
	// The command says where it serves on its output: this line is for
	// the verbose log only, as clean runs keep stderr empty.
	logger.V(1).Info("Cluster DNS serving", "address", d.Addr(), "zone", d.index.Zone())
	if err := d.server.Serve(ctx); err != nil {
		logger.Error(err, "Cluster DNS stopped serving")
	}
	wg.Wait()
}

// HostUpstreams are the nameservers (host:port) of a resolv.conf (""
// is DefaultResolvConf); none when it cannot be read.
func HostUpstreams(path string) []string {
	if path == "" {
		path = DefaultResolvConf
	}
	cfg, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return []string{}
	}
	out := make([]string, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		out = append(out, net.JoinHostPort(s, cfg.Port))
	}
	return out
}

// ServiceIP is the cluster DNS's well-known address in a service range:
// its tenth address, as kubeadm gives kube-dns (10.96.0.10 of
// 10.96.0.0/12, 10.43.0.10 of Kite's default 10.43.0.0/16).
func ServiceIP(cidr string) (string, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return "", fmt.Errorf("service range %q: %w", cidr, err)
	}
	ip := n.IP.To16()
	if v4 := n.IP.To4(); v4 != nil {
		ip = v4
	}
	out := make(net.IP, len(ip))
	copy(out, ip)
	carry := 10
	for i := len(out) - 1; i >= 0 && carry > 0; i-- {
		sum := int(out[i]) + carry
		out[i], carry = byte(sum), sum>>8
	}
	if !n.Contains(out) {
		return "", fmt.Errorf("service range %q has no tenth address", cidr)
	}
	return out.String(), nil
}
