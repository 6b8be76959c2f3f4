// Command proxyvs measures one service proxy (kube-proxy or Kite's
// agent/proxy) through the API server, for bench/proxyvs.sh, which runs it
// against each in turn in one network namespace. It starts the proxy
// itself (the command after "--"), so that it knows its PID and can
// restart it, and sees a change in the ruleset by following `nft monitor`
// (single changes: the end of the transaction that added it) or by
// reading the proxy's table with `nft list table` (bulk: until it holds
// everything, with the end nft monitor saw beside it, as a read of the
// whole table takes up to a second):
//
//   - change: --samples single API writes, one every --spacing (more than
//     both proxies' minimum sync period of 1 s, so that each change is a
//     sync of its own), alternating a new Service (its EndpointSlice made
//     before the proxy started) and an EndpointSlice whose endpoint
//     moves to a new address; each is timed from before the write until
//     the ruleset holds the Service's cluster IP and the endpoint's
//     address (p50/p99/max);
//   - bulk: --services Services of --endpoints ready endpoints each,
//     written by 16 clients at once, until every cluster IP and endpoint
//     address is in the ruleset (from the first write and from the last);
//   - idle: the proxy's CPU over --idle with those Services, and its RSS;
//   - restart: the proxy stopped, its tables deleted (--cleanup), started
//     again with all those Services in the API, until all are in the
//     ruleset.
//
// With --kite-proxy it is instead Kite's proxy, as the agent runs it
// (agent/proxy with the agent's defaults), in a process of its own.
// It prints one JSON object.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/kite-project/kite/bench/procstat"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/proxy"
)

type options struct {
	kubeconfig, node, nodeIP, podCIDR, label, table, cleanup string
	samples, services, endpoints                             int
	spacing, idle, timeout                                   time.Duration
	command                                                  []string
}

// result is what one run measured; durations in milliseconds.
type result struct {
	Label         string    `json:"label"`
	Started       time.Time `json:"started"`
	Load          []string  `json:"load"` // /proc/loadavg before each part and at the end
	ChangeP50MS   float64   `json:"change_p50_ms"`
	ChangeP99MS   float64   `json:"change_p99_ms"`
	ChangeMaxMS   float64   `json:"change_max_ms"`
	NewSvcP99MS   float64   `json:"new_service_p99_ms"`
	EndpointP99MS float64   `json:"endpoint_move_p99_ms"`
	PollP50MS     float64   `json:"poll_p50_ms"` // one `nft list table` of the small ruleset
	Samples       int       `json:"samples"`
	BulkWriteMS   float64   `json:"bulk_write_ms"`
	BulkFirstMS   float64   `json:"bulk_from_first_write_ms"`
	BulkLastMS    float64   `json:"bulk_from_last_write_ms"`
	BulkPollMS    float64   `json:"bulk_poll_ms"` // one `nft list table` of the whole ruleset
	// The same ends as nft monitor saw them: the end of the transaction
	// that added the last address (not bounded by a table read).
	BulkMonFirstMS float64  `json:"bulk_monitor_from_first_write_ms"`
	BulkMonLastMS  float64  `json:"bulk_monitor_from_last_write_ms"`
	RSSMiB         float64  `json:"rss_mib"`
	RSSAnonMiB     float64  `json:"rss_anon_mib"`
	IdleCPUSec     float64  `json:"idle_cpu_s"`
	IdleSec        float64  `json:"idle_s"`
	IdleCPUPct     float64  `json:"idle_cpu_pct"` // percent of one core
	RestartMS      float64  `json:"restart_all_programmed_ms"`
	RuleBytes      int      `json:"ruleset_bytes"` // `nft list table` of the whole ruleset
	Errors         []string `json:"errors,omitempty"`
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	flag.StringVar(&o.node, "node", "proxy-node", "the proxy's node (created if missing)")
	flag.StringVar(&o.nodeIP, "node-ip", "10.251.0.1", "the node's InternalIP")
	flag.StringVar(&o.podCIDR, "pod-cidr", "10.42.0.0/24", "the node's podCIDR")
	flag.StringVar(&o.label, "label", "", "name of this run in the output")
	flag.StringVar(&o.table, "table", "", `the proxy's IPv4 table, e.g. "ip kube-proxy"`)
	flag.StringVar(&o.cleanup, "cleanup", "", "nft script that deletes the proxy's tables after it stopped")
	flag.IntVar(&o.samples, "samples", 100, "single changes timed")
	flag.IntVar(&o.services, "services", 1000, "Services written at once")
	flag.IntVar(&o.endpoints, "endpoints", 10, "ready endpoints per Service")
	flag.DurationVar(&o.spacing, "spacing", 1200*time.Millisecond, "least time between two single changes")
	flag.DurationVar(&o.idle, "idle", 30*time.Second, "how long the proxy's idle CPU is read")
	flag.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound of each wait")
	kiteProxy := flag.Bool("kite-proxy", false, "instead of measuring, run Kite's service proxy for --node")
	flag.Parse()
	o.command = flag.Args()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	client, err := newClient(o.kubeconfig)
	if err != nil {
		fail(err)
	}
	if *kiteProxy {
		p, err := proxy.New(proxy.Options{Client: client, NodeName: o.node})
		if err != nil {
			fail(err)
		}
		p.Run(klog.NewContext(ctx, klog.Background()))
		return
	}
	r, err := run(ctx, client, o)
	if err != nil {
		fail(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "proxyvs:", err)
	os.Exit(1)
}

func newClient(kubeconfig string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %q: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // the proxy is measured, not a client-side limiter
	return kubernetes.NewForConfig(cfg)
}

const ns = "default"

// endpointIP is the address of endpoint j of bulk Service i; group 0 is
// the new Services', group 1 the moving endpoint's, 2.. the bulk's.
func endpointIP(group, idx int) string {
	return fmt.Sprintf("10.%d.%d.%d", 60+group, idx/250, idx%250+1)
}

func service(name string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"proxyvs": "1"}},
		Spec:       v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}},
	}
}

func slice(svc string, ips ...string) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: ns, Labels: map[string]string{
			discovery.LabelServiceName: svc, discovery.LabelManagedBy: "proxyvs", "proxyvs": "1"}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: new("http"), Port: new(int32(8080)), Protocol: new(v1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{ip}, Conditions: discovery.EndpointConditions{Ready: new(true)}})
	}
	return s
}

// ensureNode creates the proxy's Node with its address and pod range, as
// an agent would have registered it.
func ensureNode(ctx context.Context, c kubernetes.Interface, o options) error {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: o.node}, Spec: v1.NodeSpec{PodCIDR: o.podCIDR, PodCIDRs: []string{o.podCIDR}}}
	got, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create node %s: %w", o.node, err)
	}
	got.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: o.nodeIP}, {Type: v1.NodeHostName, Address: o.node}}
	got.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "proxyvs"}}
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node %s status: %w", o.node, err)
	}
	return nil
}

// parallel runs f(0..n-1) on 16 goroutines and joins the errors.
func parallel(n int, f func(i int) error) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ruleset reads the proxy's table.
type ruleset struct{ table []string }

func (r ruleset) read(ctx context.Context) (string, time.Duration, error) {
	t0 := time.Now()
	out, err := exec.CommandContext(ctx, "nft", append([]string{"list", "table"}, r.table...)...).Output()
	return string(out), time.Since(t0), err
}

var ipv4 = regexp.MustCompile(`(?:^|[^0-9.])((?:[0-9]{1,3}\.){3}[0-9]{1,3})(?:[^0-9]|$)`)

// addrs is the set of IPv4 addresses written in an nft listing.
func addrs(listing string) map[string]bool {
	set := map[string]bool{}
	for _, m := range ipv4.FindAllStringSubmatch(listing, -1) {
		set[m[1]] = true
	}
	return set
}

// waitFor reads the ruleset until it holds every address of want, and
// returns when the read that found them ended, and how long one read took.
func (r ruleset) waitFor(ctx context.Context, want []string, timeout time.Duration) (time.Time, time.Duration, error) {
	deadline := time.Now().Add(timeout)
	missing := 0
	for time.Now().Before(deadline) {
		out, took, err := r.read(ctx)
		if err == nil {
			have := addrs(out)
			missing = 0
			for _, w := range want {
				if !have[w] {
					missing++
				}
			}
			if missing == 0 {
				return time.Now(), took, nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return time.Time{}, 0, fmt.Errorf("%d of %d addresses not in table %s within %v", missing, len(want), strings.Join(r.table, " "), timeout)
}

// monitor follows `nft monitor` in the namespace: an address is in the
// ruleset from the end of the transaction that added it (the "# new
// generation" line nft prints after each), as this process read it.
// Unlike reading the table (tens of ms per read on a loaded machine) it
// adds only the scheduling delay of one read to what it measures.
type monitor struct {
	mu      sync.Mutex
	seen    map[string]time.Time
	pending []string
	changed chan struct{}
}

func startMonitor(ctx context.Context) (*monitor, error) {
	cmd := exec.CommandContext(ctx, "stdbuf", "-oL", "nft", "monitor")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("nft monitor: %w", err)
	}
	m := &monitor{seen: map[string]time.Time{}, changed: make(chan struct{})}
	go func() {
		defer func() { _ = cmd.Wait() }()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			line := sc.Text()
			m.mu.Lock()
			if strings.HasPrefix(line, "# new generation") {
				now := time.Now()
				for _, a := range m.pending {
					m.seen[a] = now
				}
				m.pending = m.pending[:0]
				close(m.changed)
				m.changed = make(chan struct{})
			} else if strings.HasPrefix(line, "add ") {
				for a := range addrs(line) {
					m.pending = append(m.pending, a)
				}
			}
			m.mu.Unlock()
		}
	}()
	return m, nil
}

// waitFor waits until every address of want was added after since, and
// returns when the last of those transactions ended.
func (m *monitor) waitFor(ctx context.Context, since time.Time, want []string, timeout time.Duration) (time.Time, error) {
	deadline := time.After(timeout)
	for {
		m.mu.Lock()
		var last time.Time
		missing := 0
		for _, a := range want {
			at := m.seen[a]
			if at.Before(since) {
				missing++
			} else if at.After(last) {
				last = at
			}
		}
		ch := m.changed
		m.mu.Unlock()
		if missing == 0 {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-deadline:
			return time.Time{}, fmt.Errorf("%d of %d addresses not added within %v", missing, len(want), timeout)
		case <-ch:
		}
	}
}

// proc is the proxy under test.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func start(command []string) (*proc, error) {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", command[0], err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func run(ctx context.Context, c kubernetes.Interface, o options) (*result, error) {
	if o.kubeconfig == "" || o.table == "" || len(o.command) == 0 {
		return nil, errors.New("--kubeconfig, --table and the proxy's command (after --) are required")
	}
	r := &result{Label: o.label, Started: time.Now()}
	rs := ruleset{strings.Fields(o.table)}
	if err := ensureNode(ctx, c, o); err != nil {
		return nil, err
	}
	svcs, eps := c.CoreV1().Services(ns), c.DiscoveryV1().EndpointSlices(ns)
	nNew := (o.samples + 1) / 2
	var names []string // every Service written, for the clean-up
	defer func() {
		// Clean up whatever happened, so the next proxy starts on the
		// same API content.
		cctx := context.WithoutCancel(ctx)
		_ = parallel(len(names), func(i int) error { return svcs.Delete(cctx, names[i], metav1.DeleteOptions{}) })
		_ = eps.DeleteCollection(cctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "proxyvs=1"})
	}()

	// The new Services' EndpointSlices and the moving endpoint's Service
	// exist before the proxy starts: each timed change is one write.
	for i := range nNew {
		if _, err := eps.Create(ctx, slice(fmt.Sprintf("new-%d", i), endpointIP(0, i)), metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create slice new-%d: %w", i, err)
		}
	}
	moving, err := svcs.Create(ctx, service("moving"), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create service moving: %w", err)
	}
	names = append(names, "moving")
	movingSlice, err := eps.Create(ctx, slice("moving", endpointIP(1, 0)), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create slice moving: %w", err)
	}

	p, err := start(o.command)
	if err != nil {
		return nil, err
	}
	defer func() { p.stop(); cleanTables(o.cleanup) }()
	if _, _, err := rs.waitFor(ctx, []string{moving.Spec.ClusterIP, endpointIP(1, 0)}, o.timeout); err != nil {
		return nil, fmt.Errorf("proxy start: %w", err)
	}
	time.Sleep(2 * time.Second)
	mctx, stopMonitor := context.WithCancel(ctx)
	defer stopMonitor()
	mon, err := startMonitor(mctx)
	if err != nil {
		return nil, err
	}
	time.Sleep(500 * time.Millisecond) // nft monitor subscribed

	// Single changes.
	r.Load = append(r.Load, procstat.Load())
	var all, created, moved, polls []time.Duration
	for i := range o.samples {
		t0 := time.Now()
		var want []string
		if i%2 == 0 {
			name := fmt.Sprintf("new-%d", i/2)
			s, err := svcs.Create(ctx, service(name), metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("create service %s: %w", name, err)
			}
			names = append(names, name)
			want = []string{s.Spec.ClusterIP, endpointIP(0, i/2)}
		} else {
			ip := endpointIP(1, i)
			movingSlice.Endpoints[0].Addresses = []string{ip}
			movingSlice, err = eps.Update(ctx, movingSlice, metav1.UpdateOptions{})
			if err != nil {
				return nil, fmt.Errorf("update slice moving: %w", err)
			}
			want = []string{ip}
		}
		at, err := mon.waitFor(ctx, t0, want, o.timeout)
		if err != nil {
			return nil, fmt.Errorf("change %d: %w", i, err)
		}
		// The table, read after the fact, holds the change.
		_, took, err := rs.waitFor(ctx, want, time.Second)
		if err != nil {
			r.Errors = append(r.Errors, fmt.Sprintf("change %d: monitor saw it, the table does not hold it: %v", i, err))
		}
		d := at.Sub(t0)
		all, polls = append(all, d), append(polls, took)
		if i%2 == 0 {
			created = append(created, d)
		} else {
			moved = append(moved, d)
		}
		time.Sleep(o.spacing)
	}
	r.Samples = len(all)
	r.ChangeP50MS, r.ChangeP99MS, r.ChangeMaxMS = ms(pct(all, 50)), ms(pct(all, 99)), ms(pct(all, 100))
	r.NewSvcP99MS, r.EndpointP99MS, r.PollP50MS = ms(pct(created, 99)), ms(pct(moved, 99)), ms(pct(polls, 50))

	// Bulk.
	r.Load = append(r.Load, procstat.Load())
	bulk := make([]string, o.services)
	clusterIPs := make([]string, o.services)
	first := time.Now()
	err = parallel(o.services, func(i int) error {
		name := fmt.Sprintf("bulk-%d", i)
		ips := make([]string, o.endpoints)
		for j := range ips {
			ips[j] = endpointIP(2+(i*o.endpoints+j)/(250*250), (i*o.endpoints+j)%(250*250))
		}
		if _, err := eps.Create(ctx, slice(name, ips...), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create slice %s: %w", name, err)
		}
		s, err := svcs.Create(ctx, service(name), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create service %s: %w", name, err)
		}
		bulk[i], clusterIPs[i] = name, s.Spec.ClusterIP
		return nil
	})
	last := time.Now()
	for _, n := range bulk {
		if n != "" {
			names = append(names, n)
		}
	}
	if err != nil {
		return nil, err
	}
	want := slices.Clone(clusterIPs)
	for i := range o.services * o.endpoints {
		want = append(want, endpointIP(2+i/(250*250), i%(250*250)))
	}
	at, took, err := rs.waitFor(ctx, want, o.timeout)
	if err != nil {
		return nil, fmt.Errorf("bulk: %w", err)
	}
	r.BulkWriteMS, r.BulkFirstMS, r.BulkLastMS, r.BulkPollMS = ms(last.Sub(first)), ms(at.Sub(first)), ms(at.Sub(last)), ms(took)
	// The table read is the proof; its end is late by up to one read of
	// the whole table (0.7-1.3 s at load 30). nft monitor, which followed
	// the same transactions, says when the last address was added.
	if monAt, err := mon.waitFor(ctx, first, want, 30*time.Second); err != nil {
		r.Errors = append(r.Errors, fmt.Sprintf("bulk: the table holds every address, nft monitor did not show them: %v", err))
	} else {
		r.BulkMonFirstMS, r.BulkMonLastMS = ms(monAt.Sub(first)), ms(monAt.Sub(last))
	}
	stopMonitor()
	if out, _, err := rs.read(ctx); err == nil {
		r.RuleBytes = len(out)
	}

	// Idle with those Services.
	time.Sleep(5 * time.Second)
	r.Load = append(r.Load, procstat.Load())
	pid := p.cmd.Process.Pid
	c0, err := procstat.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(o.idle):
	}
	c1, err := procstat.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	r.IdleSec, r.IdleCPUSec = time.Since(t0).Seconds(), c1-c0
	r.IdleCPUPct = 100 * r.IdleCPUSec / r.IdleSec
	mem, err := procstat.Memory(pid)
	if err != nil {
		return nil, err
	}
	r.RSSMiB, r.RSSAnonMiB = mem["VmRSS"]/1024, mem["RssAnon"]/1024

	// Restart with everything in the API.
	p.stop()
	cleanTables(o.cleanup)
	if out, _, _ := rs.read(ctx); strings.Contains(out, "table") {
		r.Errors = append(r.Errors, "table left after stop and clean-up")
	}
	r.Load = append(r.Load, procstat.Load())
	t0 = time.Now()
	if p, err = start(o.command); err != nil {
		return nil, err
	}
	at, _, err = rs.waitFor(ctx, want, o.timeout)
	if err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	r.RestartMS = ms(at.Sub(t0))
	r.Load = append(r.Load, procstat.Load())
	return r, nil
}

// cleanTables deletes what a stopped proxy left (kube-proxy leaves its
// tables; Kite's proxy deletes its own, so the script finds nothing).
func cleanTables(script string) {
	if script == "" {
		return
	}
	cmd := exec.Command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	_ = cmd.Run()
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
