// Command nodevs measures one node agent (the upstream kubelet or Kite's
// agent) through the API server, for bench/nodevs.sh, which runs it against
// each in turn over the same containerd: pods bound to --node created one
// at a time until a watch sees each Running (p50/p99), --burst pods at once
// until all are Running, the agent's RSS then, and its CPU over --idle with
// those pods running (per pod). Pods use --image with imagePullPolicy Never,
// since this machine reaches no registry. It prints one JSON object.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/kite-project/kite/bench/procstat"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

type options struct {
	kubeconfig, node, image, label string
	pid, seq, burst                int
	ctrdPID                        int
	ctrdSock, acctDir              string
	idle, timeout                  time.Duration
}

// result is what one run measured; durations in milliseconds.
type result struct {
	Label        string    `json:"label"`
	Node         string    `json:"node"`
	Started      time.Time `json:"started"`
	Load         []string  `json:"load"` // /proc/loadavg before each workload and at the end
	SeqP50MS     float64   `json:"seq_p50_ms"`
	SeqP99MS     float64   `json:"seq_p99_ms"`
	BurstMS      float64   `json:"burst_all_running_ms"`
	RSSMiB       float64   `json:"rss_mib"`
	RSSAnonMiB   float64   `json:"rss_anon_mib"`
	RSSFileMiB   float64   `json:"rss_file_mib"`
	IdleCPUSec   float64   `json:"idle_cpu_s"`
	IdleSec      float64   `json:"idle_s"`
	CPUPerPodPct float64   `json:"idle_cpu_per_pod_pct"` // percent of one core per pod
	MinFlt       float64   `json:"minflt"`               // the agent's minor faults from its start to the RSS reading
	IdleMinFlt   float64   `json:"idle_minflt"`          // its minor faults during the idle window
	BurstCPU     *burstCPU `json:"burst_cpu,omitempty"`  // CPU seconds per component during the burst (acct.go)
	SeqCPU       *burstCPU `json:"seq_cpu,omitempty"`    // the same over the one-at-a-time phase, to compare CPU per pod
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	flag.StringVar(&o.node, "node", "", "node whose agent runs the pods")
	flag.StringVar(&o.image, "image", "registry.k8s.io/e2e-test-images/busybox:1.37.0-2", "image of the pods (already in the runtime)")
	flag.StringVar(&o.label, "label", "", "name of this run in the output")
	flag.IntVar(&o.pid, "pid", 0, "the agent's process ID, for RSS and CPU")
	flag.IntVar(&o.ctrdPID, "containerd-pid", 0, "containerd's process ID: with --pid, --containerd-socket and --acct-dir, the burst's CPU per component (acct.go)")
	flag.StringVar(&o.ctrdSock, "containerd-socket", "", "containerd's socket, which its shims' command lines name")
	flag.StringVar(&o.acctDir, "acct-dir", "", "directory for the process accounting file of the burst")
	flag.IntVar(&o.seq, "seq", 30, "pods created one at a time")
	flag.IntVar(&o.burst, "burst", 110, "pods created at once")
	flag.DurationVar(&o.idle, "idle", time.Minute, "how long the agent's CPU is read with the burst's pods running")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound of each wait")
	proxyListen := flag.String("proxy", "", "instead of measuring, serve a plain HTTP proxy to the API server on this address (see proxy.go)")
	proxyKubeconfig := flag.String("proxy-kubeconfig", "", "with --proxy, the kubeconfig to write for it")
	floor := flag.Bool("floor", false, "instead of measuring an agent, start --burst pods straight over containerd's CRI at --containerd-socket (floor.go) and print how long that took")
	floorParallel := flag.Int("floor-parallel", 8, "with --floor, pods in flight at most (0: all at once)")
	floorDir := flag.String("floor-dir", "", "with --floor, the directory for the pods' logs")
	flag.Parse()
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if *proxyListen != "" {
		if err := serveProxy(ctx, o.kubeconfig, *proxyListen, *proxyKubeconfig); err != nil {
			fmt.Fprintln(os.Stderr, "nodevs:", err)
			os.Exit(1)
		}
		return
	}
	if *floor {
		r, err := runFloor(ctx, floorOptions{label: o.label, sock: o.ctrdSock, image: o.image, dir: *floorDir,
			seq: o.seq, pods: o.burst, parallel: *floorParallel, ctrdPID: o.ctrdPID, acctDir: o.acctDir, timeout: o.timeout})
		if r != nil {
			if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
				fmt.Fprintln(os.Stderr, "nodevs:", err)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "nodevs:", err)
			os.Exit(1)
		}
		return
	}
	r, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodevs:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		fmt.Fprintln(os.Stderr, "nodevs:", err)
		os.Exit(1)
	}
}

func pod(ns, name, node, image string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: new(int64(1)),
			Containers: []v1.Container{{
				Name: "sleep", Image: image, ImagePullPolicy: v1.PullNever,
				Command: []string{"sleep", "3600"},
			}},
		},
	}
}

// tracker records when each pod of a namespace was first seen Running and
// when it was deleted, from one watch.
type tracker struct {
	mu      sync.Mutex
	running map[string]time.Time
	gone    map[string]time.Time
	changed chan struct{}
}

func track(ctx context.Context, client kubernetes.Interface, ns string) (*tracker, error) {
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("watch pods of %s: %w", ns, err)
	}
	t := &tracker{running: map[string]time.Time{}, gone: map[string]time.Time{}, changed: make(chan struct{})}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				p, isPod := ev.Object.(*v1.Pod)
				if !isPod {
					continue
				}
				now := time.Now()
				t.mu.Lock()
				if ev.Type == watch.Deleted {
					t.gone[p.Name] = now
				} else if p.Status.Phase == v1.PodRunning && t.running[p.Name].IsZero() {
					t.running[p.Name] = now
				}
				close(t.changed)
				t.changed = make(chan struct{})
				t.mu.Unlock()
			}
		}
	}()
	return t, nil
}

func (t *tracker) wait(ctx context.Context, names []string, in func(*tracker) map[string]time.Time, what string, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		t.mu.Lock()
		missing := 0
		for _, n := range names {
			if in(t)[n].IsZero() {
				missing++
			}
		}
		ch := t.changed
		t.mu.Unlock()
		if missing == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("%d of %d pods not %s within %v", missing, len(names), what, timeout)
		case <-ch:
		}
	}
}

func running(t *tracker) map[string]time.Time { return t.running }
func gone(t *tracker) map[string]time.Time    { return t.gone }

func run(ctx context.Context, o options) (*result, error) {
	if o.node == "" || o.kubeconfig == "" {
		return nil, errors.New("--node and --kubeconfig are required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", o.kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limiter: the agent is measured, not the client
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r := &result{Label: o.label, Node: o.node, Started: time.Now()}
	ns, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "nodevs-"}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	defer client.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns.Name, metav1.DeleteOptions{})
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	t, err := track(wctx, client, ns.Name)
	if err != nil {
		return nil, err
	}
	pods := client.CoreV1().Pods(ns.Name)
	create := func(names []string) error {
		errs := make(chan error, len(names))
		sem := make(chan struct{}, 16)
		for _, n := range names {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				_, err := pods.Create(ctx, pod(ns.Name, n, o.node, o.image), metav1.CreateOptions{})
				errs <- err
			}()
		}
		var all []error
		for range names {
			all = append(all, <-errs)
		}
		return errors.Join(all...)
	}
	deleteAll := func(names []string) error {
		for _, n := range names {
			if err := pods.Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("delete pod %s: %w", n, err)
			}
		}
		return t.wait(ctx, names, gone, "deleted", o.timeout)
	}

	// One at a time.
	r.Load = append(r.Load, procstat.Load())
	accounted := o.pid > 0 && o.ctrdPID > 0 && o.acctDir != ""
	var sc *burstCPU
	if accounted {
		if sc, err = startBurstCPU(o.acctDir, o.pid, o.ctrdPID, o.ctrdSock); err != nil {
			return nil, err
		}
		defer syscall.Acct("") // accounting off on every way out (stop switches it off first)
	}
	var lat []time.Duration
	var seq []string
	for i := range o.seq {
		n := "seq-" + strconv.Itoa(i)
		t0 := time.Now()
		if err := create([]string{n}); err != nil {
			return nil, err
		}
		if err := t.wait(ctx, []string{n}, running, "Running", o.timeout); err != nil {
			return nil, err
		}
		t.mu.Lock()
		lat = append(lat, t.running[n].Sub(t0))
		t.mu.Unlock()
		seq = append(seq, n)
	}
	if sc != nil {
		if err := sc.stop(len(seq)); err != nil {
			return nil, err
		}
		r.SeqCPU = sc
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		r.SeqP50MS, r.SeqP99MS = ms(pct(lat, 50)), ms(pct(lat, 99))
	}
	if err := deleteAll(seq); err != nil {
		return nil, err
	}

	// All at once, then idle.
	r.Load = append(r.Load, procstat.Load())
	burst := make([]string, o.burst)
	for i := range burst {
		burst[i] = "burst-" + strconv.Itoa(i)
	}
	var bc *burstCPU
	if accounted {
		if bc, err = startBurstCPU(o.acctDir, o.pid, o.ctrdPID, o.ctrdSock); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if err := create(burst); err != nil {
		return nil, err
	}
	if err := t.wait(ctx, burst, running, "Running", o.timeout); err != nil {
		return nil, err
	}
	r.BurstMS = ms(time.Since(start))
	if bc != nil {
		if err := bc.stop(len(burst)); err != nil {
			return nil, err
		}
		r.BurstCPU = bc
	}
	if o.pid > 0 {
		// Let the status writes of the burst settle before the idle minute.
		time.Sleep(10 * time.Second)
		r.Load = append(r.Load, procstat.Load())
		c0, err := procstat.CPUSeconds(o.pid)
		if err != nil {
			return nil, err
		}
		f0, err := procstat.MinorFaults(o.pid)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(o.idle):
		}
		c1, err := procstat.CPUSeconds(o.pid)
		if err != nil {
			return nil, err
		}
		f1, err := procstat.MinorFaults(o.pid)
		if err != nil {
			return nil, err
		}
		r.IdleSec = time.Since(t0).Seconds()
		r.IdleCPUSec = c1 - c0
		r.MinFlt, r.IdleMinFlt = f1, f1-f0
		r.CPUPerPodPct = 100 * r.IdleCPUSec / r.IdleSec / float64(o.burst)
		mem, err := procstat.Memory(o.pid)
		if err != nil {
			return nil, err
		}
		r.RSSMiB, r.RSSAnonMiB, r.RSSFileMiB = mem["VmRSS"]/1024, mem["RssAnon"]/1024, mem["RssFile"]/1024
	}
	if err := deleteAll(burst); err != nil {
		return nil, err
	}
	r.Load = append(r.Load, procstat.Load())
	return r, nil
}

func pct(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
