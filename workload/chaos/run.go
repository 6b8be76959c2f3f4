package chaos

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/workload/chaoscheck"
)

const namespace = "chaos"

// Fault names, in the order they fire.
const (
	FaultCut       = "proxy-cut"
	FaultAPIServer = "apiserver-kill"
	FaultEtcd      = "etcd-kill"
	FaultAgent     = "agent-kill"
	FaultStall     = "stalled-client"
	// FaultBoth kills etcd and the API server together, then starts them.
	FaultBoth    = "etcd+apiserver-kill"
	FaultCompact = "compaction"
)

var schedule = []string{FaultCut, FaultAPIServer, FaultEtcd, FaultAgent, FaultStall, FaultBoth}

// Run starts the cluster, runs the load under faults for opts.Duration,
// checks the outcome and stops everything it started, also on error.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	token := strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 10)
	marker := "sleep 3600." + token
	c, err := startCluster(ctx, opts.Binary, opts.Dir, "chaos-"+token)
	defer c.close(marker)
	if err != nil {
		return nil, err
	}
	r := &runner{opts: opts, c: c, marker: marker, report: &Report{Faults: map[string]int{}, PodCommand: marker}}
	return r.run(ctx)
}

type runner struct {
	opts   Options
	c      *cluster
	marker string
	report *Report
	etcd   *clientv3.Client
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.opts.Log, "%s chaos: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (r *runner) run(ctx context.Context) (*Report, error) {
	tlsConfig, err := r.c.etcdTLS.ClientConfig()
	if err != nil {
		return nil, err
	}
	r.etcd, err = clientv3.New(clientv3.Config{Endpoints: []string{r.c.etcdURL}, TLS: tlsConfig, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	defer r.etcd.Close()
	direct, err := kubernetes.NewForConfig(r.c.direct)
	if err != nil {
		return nil, err
	}
	// Half the clients speak JSON, half protobuf.
	var clients [2]kubernetes.Interface
	for i, ct := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		cfg := rest.CopyConfig(r.c.proxied)
		cfg.ContentType, cfg.AcceptContentTypes = ct, ct
		if clients[i], err = kubernetes.NewForConfig(cfg); err != nil {
			return nil, err
		}
	}
	proxied := clients[0]
	if _, err := direct.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	pods := &agentPods{client: direct, ns: namespace, node: r.c.node, marker: r.marker, n: r.opts.Pods}
	if err := pods.create(ctx); err != nil {
		return nil, err
	}
	r.logf("%d pods running on %s; starting %d watchers, %d writers", r.opts.Pods, r.c.node, r.opts.Watchers, r.opts.Writers)

	// Watchers and writers run until their contexts end.
	var restarts atomic.Int64
	watchCtx, stopWatchers := context.WithCancel(ctx)
	defer stopWatchers()
	var wg sync.WaitGroup
	watchers := make([]*watcher, r.opts.Watchers)
	for i := range watchers {
		watchers[i] = &watcher{client: clients[i%2], ns: namespace, group: i % r.opts.Groups, restarts: &restarts}
		wg.Add(1)
		go func() { defer wg.Done(); watchers[i].run(watchCtx) }()
	}
	log := &writeLog{}
	writeCtx, stopWriters := context.WithCancel(ctx)
	defer stopWriters()
	var writersWG sync.WaitGroup
	for i := range r.opts.Writers {
		w := &writer{client: clients[i%2], ns: namespace, id: i, groups: r.opts.Groups, log: log}
		writersWG.Add(1)
		go func() { defer writersWG.Done(); w.run(writeCtx, r.opts.WritePause) }()
	}

	stalled := &stalledClient{}
	defer stalled.close()
	start := time.Now()
	faultErr := r.faults(ctx, start.Add(r.opts.Duration), pods, stalled)
	stopWriters()
	writersWG.Wait()
	r.report.Duration = time.Since(start)
	if faultErr != nil {
		stopWatchers()
		wg.Wait()
		return r.report, faultErr
	}

	// Fence: one acknowledged write per group, through the healed proxy,
	// that every watcher of the group must reach.
	fences, err := r.fence(ctx, proxied, log)
	if err != nil {
		stopWatchers()
		wg.Wait()
		return r.report, err
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, w := range watchers {
		for w.lastRV() < fences[w.group] && time.Now().Before(deadline) && ctx.Err() == nil {
			pause(ctx, 100*time.Millisecond)
		}
	}
	stopWatchers()
	wg.Wait()
	r.report.WatchRestarts = restarts.Load()
	stalled.close()

	writes, groups := log.all()
	if err := r.verdict(ctx, direct, writes, groups, watchers, pods); err != nil {
		return r.report, err
	}
	return r.report, nil
}

// faults fires the schedule until end (and through one round at least), compacts every 10 s, and checks the
// agent's pods after each fault.
func (r *runner) faults(ctx context.Context, end time.Time, pods *agentPods, stalled *stalledClient) error {
	fault := time.NewTicker(r.opts.FaultInterval)
	defer fault.Stop()
	compact := time.NewTicker(10 * time.Second)
	defer compact.Stop()
	var lastRev int64
	// The run lasts until end, and at least until every fault fired once.
	for n := 0; ; {
		if n >= len(schedule) && !time.Now().Before(end) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(max(time.Until(end), 0) + time.Millisecond):
		case <-compact.C:
			// Compact to the revision seen 10 s ago, as kube-apiserver's
			// compactor does; etcd may be down just now.
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if resp, err := r.etcd.Get(cctx, "compact-probe"); err == nil {
				if lastRev > 0 {
					if _, err := r.etcd.Compact(cctx, lastRev); err == nil {
						r.report.Faults[FaultCompact]++
					}
				}
				lastRev = resp.Header.Revision
			}
			cancel()
		case <-fault.C:
			name := schedule[n%len(schedule)]
			n++
			if err := r.fire(ctx, name, stalled); err != nil {
				return fmt.Errorf("fault %s: %w", name, err)
			}
			r.report.Faults[name]++
			// A pod's process must survive every fault; give a restarted
			// agent a moment to adopt before looking.
			pause(ctx, time.Second)
			if p := pods.check(); len(p) > 0 {
				r.report.PodProblems = append(r.report.PodProblems, fmt.Sprintf("after %s: %v", name, p))
			}
		}
	}
}

func (r *runner) fire(ctx context.Context, name string, stalled *stalledClient) error {
	switch name {
	case FaultCut:
		r.logf("cut %d proxied connections", r.c.proxy.cut())
	case FaultAPIServer:
		r.logf("SIGKILL apiserver (pid %d)", r.c.api.pid())
		r.c.api.kill()
		return r.c.api.start(ctx)
	case FaultEtcd:
		r.logf("SIGKILL etcd (pid %d)", r.c.etcd.pid())
		r.c.etcd.kill()
		// Stay down a moment, so that the API server sees the outage.
		pause(ctx, 2*time.Second)
		return r.c.etcd.start(ctx)
	case FaultAgent:
		r.logf("SIGKILL agent (pid %d)", r.c.agent.pid())
		r.c.agent.kill()
		return r.c.agent.start(ctx)
	case FaultBoth:
		r.logf("SIGKILL etcd (pid %d) and apiserver (pid %d)", r.c.etcd.pid(), r.c.api.pid())
		r.c.etcd.kill()
		r.c.api.kill()
		pause(ctx, time.Second)
		if err := r.c.etcd.start(ctx); err != nil {
			return err
		}
		return r.c.api.start(ctx)
	case FaultStall:
		r.logf("open 4 watches that are never read")
		return stalled.open(r.c.proxied, namespace, 4)
	}
	return nil
}

// fence writes one object per group, retrying until acknowledged, and
// returns each group's resourceVersion.
func (r *runner) fence(ctx context.Context, client kubernetes.Interface, log *writeLog) (map[int]int64, error) {
	rvs := map[int]int64{}
	deadline := time.Now().Add(time.Minute)
	for g := range r.opts.Groups {
		cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fence-%d", g), Namespace: namespace,
			Labels: map[string]string{groupLabel: strconv.Itoa(g)}, Annotations: map[string]string{seqAnnotation: "1"}}}
		for {
			rctx, cancel := context.WithTimeout(ctx, requestTimeout)
			got, err := client.CoreV1().ConfigMaps(namespace).Create(rctx, cm, metav1.CreateOptions{})
			cancel()
			if err == nil {
				rvs[g] = parseRV(got.ResourceVersion)
				log.add(chaoscheck.Write{Name: cm.Name, Seq: 1, RV: rvs[g], Acked: true}, g)
				break
			}
			if apierrors.IsAlreadyExists(err) {
				// An earlier attempt landed unacknowledged: its RV fences.
				if cur, gerr := client.CoreV1().ConfigMaps(namespace).Get(ctx, cm.Name, metav1.GetOptions{}); gerr == nil {
					rvs[g] = parseRV(cur.ResourceVersion)
					break
				}
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return nil, fmt.Errorf("fence write %s: %w", cm.Name, err)
			}
			log.add(chaoscheck.Write{Name: cm.Name, Seq: 1}, g)
			pause(ctx, 500*time.Millisecond)
		}
	}
	return rvs, nil
}
