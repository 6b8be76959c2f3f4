package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/listwatch"
)

// Defaults, kube-proxy's (--iptables-min-sync-period and
// --iptables-sync-period, which its nftables mode uses too).
const (
	DefaultMinSyncPeriod = time.Second
	DefaultSyncPeriod    = 30 * time.Second
)

// Options configures a Proxy.
type Options struct {
	// Client reads Services, EndpointSlices and the Node. Required.
	Client kubernetes.Interface
	// NodeName is the node the proxy runs on. Required.
	NodeName string
	// NodePortIPs accept NodePort traffic; empty means the Node's primary
	// InternalIP of each family, as it is in the API (kube-proxy's
	// nftables default, --nodeport-addresses primary).
	NodePortIPs []netip.Addr
	// ClusterCIDRs are the pods' ranges (kube-proxy's --cluster-cidr);
	// empty means the Node's spec.podCIDRs (its --detect-local-mode
	// NodeCIDR).
	ClusterCIDRs []netip.Prefix
	// MinSyncPeriod is the least time between two applies: changes that
	// come within it are applied together at its end. Zero means
	// DefaultMinSyncPeriod.
	MinSyncPeriod time.Duration
	// SyncPeriod is the time after which the rules are applied again even
	// if nothing changed (so that a table someone else changed is put
	// back). Zero means DefaultSyncPeriod.
	SyncPeriod time.Duration
	// NFT is the command that reads an nft script on its standard input,
	// without the "-f -"; nil means {"nft"}. Tests give
	// {"ip", "netns", "exec", NAME, "nft"} to programme a namespace of
	// their own.
	NFT []string
	// OnSync, if set, is called after each apply with its outcome.
	OnSync func(SyncResult)
}

// FullSyncPeriod is how often the tables are written whole even when an
// update would do (upstream's full sync, hourly): it puts back what
// someone else changed in them, and resets the affinity sets.
const FullSyncPeriod = time.Hour

// SyncResult tells what one apply did.
type SyncResult struct {
	// Took is the time to decide, render and apply.
	Took time.Duration
	// Rules is the ruleset decided (and, without Err, applied).
	Rules Ruleset
	// Full says whether the tables were written whole (Render) rather
	// than updated (RenderUpdate).
	Full bool
	// Script is the script given to nft; empty when nothing changed.
	Script string
	// Err is nft's error, if any.
	Err error
}

// Proxy keeps the node's proxy tables in step with the API.
type Proxy struct {
	opts     Options
	services *notifyingStore[*v1.Service]
	slices   *notifyingStore[*discovery.EndpointSlice]
	nodes    *notifyingStore[*v1.Node]
	changed  chan struct{}

	// Owned by Run's goroutine: what the tables hold (nil: unknown, so
	// the next sync writes them whole), the chains emptied by the last
	// update, and when they were last written whole.
	applied  *Ruleset
	stale    Stale
	lastFull time.Time
}

// New checks opts and builds a Proxy; Run starts it.
func New(opts Options) (*Proxy, error) {
	if opts.Client == nil || opts.NodeName == "" {
		return nil, errors.New("proxy: a client and a node name are required")
	}
	if opts.MinSyncPeriod <= 0 {
		opts.MinSyncPeriod = DefaultMinSyncPeriod
	}
	if opts.SyncPeriod <= 0 {
		opts.SyncPeriod = DefaultSyncPeriod
	}
	if len(opts.NFT) == 0 {
		opts.NFT = []string{"nft"}
	}
	p := &Proxy{opts: opts, changed: make(chan struct{}, 1)}
	kick := func() {
		select {
		case p.changed <- struct{}{}:
		default: // a sync is pending already: this change joins it
		}
	}
	p.services = newNotifyingStore[*v1.Service](kick)
	p.slices = newNotifyingStore[*discovery.EndpointSlice](kick)
	p.nodes = newNotifyingStore[*v1.Node](kick)
	return p, nil
}

// Run watches the API and applies the rules until ctx ends, then deletes
// the proxy's tables. The first apply waits until Services and
// EndpointSlices have been listed, so that a start never blackholes
// Services whose endpoints are not read yet.
func (p *Proxy) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("proxy")
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs := p.opts.Client
	reflectors := []struct {
		name  string
		lw    listwatch.ListerWatcher
		store listwatch.Store
		typ   runtime.Object
	}{
		{"services", listwatch.FromTypedClient(cs.CoreV1().Services(metav1.NamespaceAll), nil), p.services, &v1.Service{}},
		{"endpointslices", listwatch.FromTypedClient(cs.DiscoveryV1().EndpointSlices(metav1.NamespaceAll), nil), p.slices, &discovery.EndpointSlice{}},
		{"node " + p.opts.NodeName, listwatch.FromTypedClient(cs.CoreV1().Nodes(), func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", p.opts.NodeName).String()
		}), p.nodes, &v1.Node{}},
	}
	for _, r := range reflectors {
		refl, err := listwatch.NewReflector(listwatch.Options{Name: r.name, ListerWatcher: r.lw, Store: r.store, ExpectedType: r.typ, RefusedMaxWait: time.Second})
		if err != nil {
			logger.Error(err, "Cannot watch", "resource", r.name)
			return
		}
		wg.Go(func() { refl.Run(ctx) })
	}
	defer p.cleanup(logger)
	for !p.services.synced() || !p.slices.synced() {
		select {
		case <-ctx.Done():
			return
		case <-p.changed:
		}
	}
	logger.V(1).Info("Service proxy started", "table", TableName, "minSyncPeriod", p.opts.MinSyncPeriod)
	var last time.Time
	resync := time.NewTimer(0)
	defer resync.Stop()
	for {
		// Either a change or the periodic resync; then wait out the rest
		// of the minimum period, so that a burst is applied once.
		select {
		case <-ctx.Done():
			return
		case <-p.changed:
		case <-resync.C:
		}
		if wait := p.opts.MinSyncPeriod - time.Since(last); !last.IsZero() && wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		// Changes seen until now are in this sync.
		select {
		case <-p.changed:
		default:
		}
		start := time.Now()
		wrote, err := p.sync(ctx)
		// Only a sync that ran nft opens the minimum period: the periodic
		// resync and events that change no rule (an EndpointSlice whose
		// Service is not there yet) find nothing to write, and must not
		// hold back the next real change by up to a period (upstream's
		// runner has no periodic sync to do so).
		if wrote || err != nil {
			last = start
		}
		next := p.opts.SyncPeriod
		if err != nil {
			logger.Error(err, "Applying the service rules failed; retrying")
			next = p.opts.MinSyncPeriod
		}
		resync.Reset(next)
	}
}

// sync decides the rules from what the proxy holds and applies them: as
// an update of what the tables hold, or whole when that is unknown (the
// first sync, after a failure), when an update cannot express the change,
// or once per FullSyncPeriod.
// It says whether it wrote anything.
func (p *Proxy) sync(ctx context.Context) (bool, error) {
	start := time.Now()
	next := Rules(p.services.list(), p.slices.list(), p.config())
	res := SyncResult{Rules: next}
	var emptied Stale
	ok := false
	if p.applied != nil && time.Since(p.lastFull) < FullSyncPeriod {
		res.Script, emptied, ok = RenderUpdate(*p.applied, next, p.stale)
	}
	if !ok {
		res.Script, emptied, res.Full = Render(next), nil, true
	}
	if res.Script != "" {
		res.Err = p.nft(ctx, res.Script)
	}
	if res.Err != nil {
		p.applied = nil
	} else {
		p.applied, p.stale = &next, emptied
		if res.Full {
			p.lastFull = start
		}
	}
	res.Took = time.Since(start)
	klog.FromContext(ctx).V(4).Info("Applied service rules", "took", res.Took, "full", res.Full, "bytes", len(res.Script), "err", res.Err)
	if p.opts.OnSync != nil {
		p.opts.OnSync(res)
	}
	return res.Script != "", res.Err
}

// config is the node's part of the decision: options, else the Node.
func (p *Proxy) config() Config {
	cfg := Config{NodeName: p.opts.NodeName, NodePortIPs: p.opts.NodePortIPs, LocalCIDRs: p.opts.ClusterCIDRs}
	nodes := p.nodes.list()
	if len(nodes) == 0 {
		return cfg
	}
	n := nodes[0]
	if len(cfg.NodePortIPs) == 0 {
		cfg.NodePortIPs = primaryIPs(n)
	}
	if len(cfg.LocalCIDRs) == 0 {
		cidrs := n.Spec.PodCIDRs
		if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
			cidrs = []string{n.Spec.PodCIDR}
		}
		for _, c := range cidrs {
			if p, err := netip.ParsePrefix(c); err == nil {
				cfg.LocalCIDRs = append(cfg.LocalCIDRs, p)
			}
		}
	}
	return cfg
}

// primaryIPs is the Node's first InternalIP of each family (upstream's
// "primary" node port addresses).
func primaryIPs(n *v1.Node) []netip.Addr {
	var out []netip.Addr
	seen := map[string]bool{}
	for _, a := range n.Status.Addresses {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil || seen[familyOf(ip)] {
			continue
		}
		seen[familyOf(ip)] = true
		out = append(out, ip.Unmap())
	}
	return out
}

func (p *Proxy) nft(ctx context.Context, script string) error { return Apply(ctx, p.opts.NFT, script) }

// Apply runs nft (the command and its first arguments, e.g. {"nft"}) with
// script on its standard input: one transaction, applied whole or not at
// all.
func Apply(ctx context.Context, nft []string, script string) error {
	args := append(append([]string{}, nft[1:]...), "-f", "-")
	cmd := exec.CommandContext(ctx, nft[0], args...)
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s -f -: %w: %s", strings.Join(nft, " "), err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// cleanup deletes the proxy's tables: a stopped proxy leaves no rules.
func (p *Proxy) cleanup(logger klog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.nft(ctx, DeleteScript()); err != nil {
		logger.Error(err, "Deleting the service proxy's tables failed")
		return
	}
	logger.V(1).Info("Service proxy stopped; its tables are deleted", "table", TableName)
}

// notifyingStore is an Indexer that calls notify after every write, and
// knows whether its first list came.
type notifyingStore[T runtime.Object] struct {
	*listwatch.Indexer[T]
	notify func()
	mu     sync.Mutex
	listed bool
}

func newNotifyingStore[T runtime.Object](notify func()) *notifyingStore[T] {
	return &notifyingStore[T]{Indexer: listwatch.NewIndexer(listwatch.IndexerOptions[T]{}), notify: notify}
}

func (s *notifyingStore[T]) after(err error) error {
	if err == nil {
		s.notify()
	}
	return err
}

func (s *notifyingStore[T]) Add(obj runtime.Object) error    { return s.after(s.Indexer.Add(obj)) }
func (s *notifyingStore[T]) Update(obj runtime.Object) error { return s.after(s.Indexer.Update(obj)) }
func (s *notifyingStore[T]) Delete(obj runtime.Object) error { return s.after(s.Indexer.Delete(obj)) }
func (s *notifyingStore[T]) Replace(objs []runtime.Object, rv string) error {
	err := s.Indexer.Replace(objs, rv)
	if err == nil {
		s.mu.Lock()
		s.listed = true
		s.mu.Unlock()
	}
	return s.after(err)
}

func (s *notifyingStore[T]) synced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listed
}

func (s *notifyingStore[T]) list() []T { return s.Indexer.List() }
