package routes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/listwatch"
)

// DefaultSyncPeriod is how often the routes and the masquerade table are
// put back even when no Node changed (someone deleted a route).
const DefaultSyncPeriod = 30 * time.Second

// Options configures a HostGateway.
type Options struct {
	// Client reads the Nodes. Required.
	Client kubernetes.Interface
	// NodeName is this node. Required.
	NodeName string
	// IP and NFT are the ip and nft commands (nil: {"ip"}, {"nft"});
	// tests give {"ip", "-n", NS} and {"ip", "netns", "exec", NS, "nft"}.
	IP, NFT []string
	// SyncPeriod: zero is DefaultSyncPeriod.
	SyncPeriod time.Duration
	// OnSync, if set, is called after each sync with its outcome.
	OnSync func(SyncResult)
}

// SyncResult tells what one sync did.
type SyncResult struct {
	Plan Plan
	// Commands are the ip commands run (arguments of "ip").
	Commands [][]string
	// Err joins what failed.
	Err error
}

// HostGateway keeps the node's routes to other nodes' podCIDRs and its
// pods' masquerade in step with the Nodes. Its routes and table stay
// when it stops, so that pods keep their traffic while the agent
// restarts; the next start takes them over (Protocol) and removes what
// no node needs.
type HostGateway struct {
	opts    Options
	mu      sync.Mutex
	nodes   []*v1.Node
	listed  bool
	changed chan struct{}
	// lastScript is the masquerade applied last (owned by Run): an
	// unchanged one is not written again but at the periodic sync.
	lastScript string
}

// New checks opts and builds a HostGateway; Run starts it.
func New(opts Options) (*HostGateway, error) {
	if opts.Client == nil || opts.NodeName == "" {
		return nil, errors.New("routes: a client and a node name are required")
	}
	if len(opts.IP) == 0 {
		opts.IP = []string{"ip"}
	}
	if len(opts.NFT) == 0 {
		opts.NFT = []string{"nft"}
	}
	if opts.SyncPeriod <= 0 {
		opts.SyncPeriod = DefaultSyncPeriod
	}
	return &HostGateway{opts: opts, changed: make(chan struct{}, 1)}, nil
}

// Run watches the Nodes and syncs after each change (once they have been
// listed: before that it would remove the routes of nodes not read yet)
// and every SyncPeriod, until ctx ends.
func (h *HostGateway) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("routes")
	ctx = klog.NewContext(ctx, logger)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	store := listwatch.NewUndeltaStore(listwatch.UndeltaOptions[*v1.Node]{Push: func(nodes []*v1.Node) {
		h.mu.Lock()
		h.nodes, h.listed = nodes, true
		h.mu.Unlock()
		select {
		case h.changed <- struct{}{}:
		default:
		}
	}})
	refl, err := listwatch.NewReflector(listwatch.Options{Name: "nodes", ListerWatcher: listwatch.FromTypedClient(h.opts.Client.CoreV1().Nodes(), nil),
		Store: store, ExpectedType: &v1.Node{}, RefusedMaxWait: time.Second})
	if err != nil {
		logger.Error(err, "Cannot watch the Nodes; no routes to other nodes' pods")
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { refl.Run(ctx) })
	resync := time.NewTimer(h.opts.SyncPeriod)
	defer resync.Stop()
	var lastProblems []string
	// A failure (a gateway off the link) is retried after 1 s, doubling
	// up to SyncPeriod, and logged when it differs from the last one.
	lastErr, retry := "", time.Second
	for {
		full := false
		select {
		case <-ctx.Done():
			return
		case <-h.changed:
		case <-resync.C:
			full = true
		}
		h.mu.Lock()
		nodes, listed := h.nodes, h.listed
		h.mu.Unlock()
		if !listed {
			resync.Reset(h.opts.SyncPeriod)
			continue
		}
		res := h.Sync(ctx, nodes, full)
		if !slices.Equal(res.Plan.Problems, lastProblems) {
			for _, p := range res.Plan.Problems {
				logger.Info("Pods of a node cannot be routed to", "problem", p)
			}
			lastProblems = res.Plan.Problems
		}
		next := h.opts.SyncPeriod
		switch {
		case res.Err != nil:
			if res.Err.Error() != lastErr {
				logger.Error(res.Err, "Syncing the routes to other nodes' pods failed; retrying")
				lastErr = res.Err.Error()
			}
			next, retry = retry, min(2*retry, h.opts.SyncPeriod)
		case lastErr != "":
			logger.Info("Routes to other nodes' pods synced again")
			lastErr, retry = "", time.Second
		}
		if h.opts.OnSync != nil {
			h.opts.OnSync(res)
		}
		resync.Reset(next)
	}
}

// Sync applies the plan for nodes: the routes of Protocol the node has
// are read and changed into the plan's, and the masquerade tables are
// written when they changed (or always, with full).
func (h *HostGateway) Sync(ctx context.Context, nodes []*v1.Node, full bool) SyncResult {
	logger := klog.FromContext(ctx)
	res := SyncResult{Plan: Decide(h.opts.NodeName, nodes)}
	var errs []error
	if script := RenderMasquerade(res.Plan); full || script != h.lastScript {
		if err := h.run(ctx, h.opts.NFT, script, "-f", "-"); err != nil {
			errs = append(errs, err)
			h.lastScript = ""
		} else {
			h.lastScript = script
		}
	}
	current, err := h.currentRoutes(ctx, wantsIPv6(res.Plan.Routes))
	if err != nil {
		errs = append(errs, err)
	} else {
		res.Commands = RouteChanges(current, res.Plan.Routes)
		for _, c := range res.Commands {
			if err := h.run(ctx, h.opts.IP, "", c...); err != nil {
				// A gateway the node cannot reach directly ("Nexthop has
				// invalid gateway"): the nodes are not on one link.
				errs = append(errs, err)
				continue
			}
			logger.V(2).Info("Route changed", "command", strings.Join(c, " "))
		}
	}
	res.Err = errors.Join(errs...)
	return res
}

// wantsIPv6 says whether routes has an IPv6 one.
func wantsIPv6(routes []Route) bool {
	return slices.ContainsFunc(routes, func(r Route) bool { return r.Dst.Addr().Is6() })
}

// currentRoutes are the node's routes of Protocol in the main table. A
// failure to list the IPv6 ones (a kernel without IPv6) is an error only
// where IPv6 routes are wanted.
func (h *HostGateway) currentRoutes(ctx context.Context, needIPv6 bool) ([]Route, error) {
	var routes []Route
	for _, fam := range []string{"-4", "-6"} {
		var out bytes.Buffer
		cmd := h.command(ctx, h.opts.IP, "-j", fam, "route", "show", "table", "main", "proto", fmt.Sprint(Protocol))
		cmd.Stdout = &out
		if err := runCmd(cmd); err != nil {
			if fam == "-6" && !needIPv6 {
				continue
			}
			return nil, err
		}
		var rs []struct {
			Dst     string `json:"dst"`
			Gateway string `json:"gateway"`
		}
		if b := bytes.TrimSpace(out.Bytes()); len(b) > 0 {
			if err := json.Unmarshal(b, &rs); err != nil {
				return nil, fmt.Errorf("routes: ip route show: %w: %s", err, b)
			}
		}
		for _, r := range rs {
			dst, err := netip.ParsePrefix(r.Dst)
			if err != nil {
				// A host route is shown without its length.
				a, aerr := netip.ParseAddr(r.Dst)
				if aerr != nil {
					continue
				}
				dst = netip.PrefixFrom(a, a.BitLen())
			}
			via, _ := netip.ParseAddr(r.Gateway)
			routes = append(routes, Route{Dst: dst, Via: via})
		}
	}
	return routes, nil
}

func (h *HostGateway) command(ctx context.Context, base []string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, base[0], append(slices.Clone(base[1:]), args...)...)
}

// run runs base with args, stdin if not empty.
func (h *HostGateway) run(ctx context.Context, base []string, stdin string, args ...string) error {
	cmd := h.command(ctx, base, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return runCmd(cmd)
}

// runCmd runs cmd, its error naming the command and carrying its output.
func runCmd(cmd *exec.Cmd) error {
	var stderr bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &stderr
	}
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("routes: %s: %w: %s", strings.Join(cmd.Args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// Cleanup deletes the masquerade tables and the routes of Protocol (the
// agent's --cleanup; a stopping agent leaves them).
func (h *HostGateway) Cleanup(ctx context.Context) error {
	errs := []error{h.run(ctx, h.opts.NFT, DeleteScript(), "-f", "-")}
	current, err := h.currentRoutes(ctx, false)
	errs = append(errs, err)
	for _, c := range RouteChanges(current, nil) {
		errs = append(errs, h.run(ctx, h.opts.IP, "", c...))
	}
	return errors.Join(errs...)
}
