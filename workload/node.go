package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// NodeOptions size the node workloads of `kite bench node`: pods bound to
// one node whose agent runs them, measured from the API as a user sees
// them. The zero value of a field means its default.
type NodeOptions struct {
	// Node is the node whose agent runs the pods. Required.
	Node string
	// Namespace, created and deleted by RunNode; "" means a generated
	// "kite-bench-node-" name.
	Namespace string
	// Pods are created one after another, each waited for (default 100).
	// A negative count skips the workload, here and below.
	Pods int
	// Burst pods are created at once (default 110, the kubelet's
	// default pod limit).
	Burst int
	// StaticPods manifests are written into ManifestDir at once (default
	// 100); with ManifestDir "" the static workload is skipped.
	StaticPods  int
	ManifestDir string
	// AgentPID, if set, is the agent's process: its RSS is read from
	// /proc while the burst's pods run.
	AgentPID int
	// Timeout bounds each wait for pods to run or go (default 2 min).
	Timeout time.Duration
	// Log, if set, gets one line as each workload starts.
	Log io.Writer
}

func (o NodeOptions) withDefaults() (NodeOptions, error) {
	if o.Node == "" {
		return o, errors.New("workload: a node is required")
	}
	if o.Pods == 0 {
		o.Pods = 100
	}
	if o.Burst == 0 {
		o.Burst = 110
	}
	if o.StaticPods == 0 {
		o.StaticPods = 100
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	o.Pods, o.Burst, o.StaticPods = max(o.Pods, 0), max(o.Burst, 0), max(o.StaticPods, 0)
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o, nil
}

// runningPod is a pod of one container that sleeps, bound to node.
func runningPod(ns, name, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "kite-bench-node"}},
		Spec: v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: new(int64(1)),
			Containers: []v1.Container{{
				Name:    "sleep",
				Image:   "busybox",
				Command: []string{"sleep", "3600"},
			}},
		},
	}
}

// podState is a point in a pod's life that phases records.
type podState int

const (
	// podBound is spec.nodeName set (by the scheduler, for an unbound
	// pod).
	podBound podState = iota
	podRunning
	// podReady is the Ready condition True.
	podReady
	podSucceeded
	podGone
)

func (s podState) String() string {
	return [...]string{"bound", "Running", "Ready", "Succeeded", "deleted"}[s]
}

// reached says whether pod (not deleted) is in state s.
func (s podState) reached(pod *v1.Pod) bool {
	switch s {
	case podBound:
		return pod.Spec.NodeName != ""
	case podRunning:
		return pod.Status.Phase == v1.PodRunning
	case podSucceeded:
		return pod.Status.Phase == v1.PodSucceeded
	case podReady:
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodReady {
				return c.Status == v1.ConditionTrue
			}
		}
	}
	return false
}

// phases follows the pods of a namespace through one watch and tells
// when each was first seen in each podState.
type phases struct {
	mu      sync.Mutex
	seen    [podGone + 1]map[string]time.Time
	changed chan struct{} // closed and replaced on every change
}

func watchPhases(ctx context.Context, client kubernetes.Interface, ns string) (*phases, error) {
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("watch pods of %s: %w", ns, err)
	}
	p := &phases{changed: make(chan struct{})}
	for s := range p.seen {
		p.seen[s] = map[string]time.Time{}
	}
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
				pod, isPod := ev.Object.(*v1.Pod)
				if !isPod {
					continue
				}
				now := time.Now()
				p.mu.Lock()
				changed := false
				for s := range p.seen {
					s := podState(s)
					if p.seen[s][pod.Name].IsZero() && (s == podGone && ev.Type == watch.Deleted || s != podGone && s.reached(pod)) {
						p.seen[s][pod.Name], changed = now, true
					}
				}
				if changed {
					close(p.changed)
					p.changed = make(chan struct{})
				}
				p.mu.Unlock()
			}
		}
	}()
	return p, nil
}

// wait returns once every one of names was seen in state, or fails at
// the timeout.
func (p *phases) wait(ctx context.Context, names []string, state podState, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		missing := 0
		for _, n := range names {
			if p.seen[state][n].IsZero() {
				missing++
			}
		}
		ch := p.changed
		p.mu.Unlock()
		if missing == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("workload: %d of %d pods not %s within %v", missing, len(names), state, timeout)
		case <-ch:
		}
	}
}

// at is when name was first seen in state.
func (p *phases) at(name string, state podState) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[state][name]
}

// RunNode runs the node workloads against the server of cfg and the agent
// of opts.Node: pods created bound to the node one at a time, each until a
// watch sees it Running (p50/p99 of create → Running); Burst pods created
// at once until all are Running (and the agent's RSS then, with
// AgentPID); their deletion until all are gone; StaticPods manifests
// written into ManifestDir until their mirror pods are Running.
func RunNode(ctx context.Context, cfg *rest.Config, opts NodeOptions) (_ *Report, err error) {
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	cfg, client, err := unlimitedClient(cfg)
	if err != nil {
		return nil, err
	}
	report := &Report{Server: cfg.Host, ContentType: cfg.ContentType, Started: time.Now()}
	ns, err := createNamespace(ctx, client, opts.Namespace, "kite-bench-node-")
	if err != nil {
		return nil, err
	}
	report.Options = Settings{Namespace: ns.Name, Pods: opts.Pods, Nodes: 1}
	report.Title = fmt.Sprintf("server %s, node %s; %d pods one at a time, %d at once, %d static; namespace %s",
		cfg.Host, opts.Node, opts.Pods, opts.Burst, opts.StaticPods, ns.Name)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		err = errors.Join(err, client.CoreV1().Namespaces().Delete(cctx, ns.Name, metav1.DeleteOptions{}))
	}()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ph, err := watchPhases(wctx, client, ns.Name)
	if err != nil {
		return nil, err
	}
	pods := client.CoreV1().Pods(ns.Name)
	deleteAll := func(names []string) (Result, error) {
		start := time.Now()
		_, d, err := parallel(ctx, len(names), 16, func(ctx context.Context, i int) error {
			return pods.Delete(ctx, names[i], metav1.DeleteOptions{})
		})
		if err != nil {
			return Result{}, err
		}
		if err := ph.wait(ctx, names, podGone, opts.Timeout); err != nil {
			return Result{}, err
		}
		d = time.Since(start)
		return Result{Name: "delete pods → all gone", Ops: len(names), Items: len(names), Duration: d, Rate: rate(len(names), d)}, nil
	}

	if opts.Pods > 0 {
		if err := seqPods(ctx, report, ph, pods, deleteAll, ns.Name, opts); err != nil {
			return nil, err
		}
	}
	if opts.Burst > 0 {
		if err := burstPods(ctx, report, ph, pods, deleteAll, ns.Name, opts); err != nil {
			return nil, err
		}
	}
	if opts.ManifestDir != "" && opts.StaticPods > 0 {
		fmt.Fprintf(opts.Log, "kite bench node: %d static pods in %s\n", opts.StaticPods, opts.ManifestDir)
		r, err := staticPods(ctx, ph, ns.Name, opts)
		if err != nil {
			return nil, err
		}
		report.Results = append(report.Results, r)
	}
	return report, nil
}

// podsClient is the namespace's pods of a typed client.
type podsClient = corev1client.PodInterface

// seqPods creates opts.Pods pods one at a time, each until a watch sees it
// Running, then deletes them.
func seqPods(ctx context.Context, report *Report, ph *phases, pods podsClient, deleteAll func([]string) (Result, error), ns string, opts NodeOptions) error {
	fmt.Fprintf(opts.Log, "kite bench node: %d pods one at a time on %s\n", opts.Pods, opts.Node)
	var lat latencies
	var seq []string
	start := time.Now()
	for i := range opts.Pods {
		name := "seq-" + strconv.Itoa(i)
		t0 := time.Now()
		if _, err := pods.Create(ctx, runningPod(ns, name, opts.Node), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("workload: create pod %s: %w", name, err)
		}
		if err := ph.wait(ctx, []string{name}, podRunning, opts.Timeout); err != nil {
			return err
		}
		lat = append(lat, ph.at(name, podRunning).Sub(t0))
		seq = append(seq, name)
	}
	r := Result{Name: "pod create → Running (one at a time)", Ops: opts.Pods, Items: opts.Pods, Duration: time.Since(start)}
	r.Rate = rate(r.Ops, r.Duration)
	lat.fill(&r)
	report.Results = append(report.Results, r)
	r, err := deleteAll(seq)
	if err != nil {
		return err
	}
	report.Results = append(report.Results, r)
	return nil
}

// burstPods creates opts.Burst pods at once until all are Running, reads
// the agent's RSS then, and deletes them.
func burstPods(ctx context.Context, report *Report, ph *phases, pods podsClient, deleteAll func([]string) (Result, error), ns string, opts NodeOptions) error {
	fmt.Fprintf(opts.Log, "kite bench node: %d pods at once\n", opts.Burst)
	burst := make([]string, opts.Burst)
	for i := range burst {
		burst[i] = "burst-" + strconv.Itoa(i)
	}
	start := time.Now()
	if _, _, err := parallel(ctx, opts.Burst, 16, func(ctx context.Context, i int) error {
		_, err := pods.Create(ctx, runningPod(ns, burst[i], opts.Node), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("workload: create burst: %w", err)
	}
	if err := ph.wait(ctx, burst, podRunning, opts.Timeout); err != nil {
		return err
	}
	r := Result{Name: "pods created at once → all Running", Ops: opts.Burst, Items: opts.Burst, Duration: time.Since(start)}
	r.Rate = rate(r.Ops, r.Duration)
	if opts.AgentPID > 0 {
		mem, err := processMemory(opts.AgentPID)
		if err != nil {
			return err
		}
		r.Note = fmt.Sprintf("agent RSS %s (anonymous %s, the binary's and other files' pages %s) with %d pods running",
			mib(mem["VmRSS"]), mib(mem["RssAnon"]), mib(mem["RssFile"]), opts.Burst)
	}
	report.Results = append(report.Results, r)
	r, err := deleteAll(burst)
	if err != nil {
		return err
	}
	report.Results = append(report.Results, r)
	return nil
}

// staticPods writes the manifests, waits for their mirror pods to run,
// then removes the files and waits for the mirror pods to go.
func staticPods(ctx context.Context, ph *phases, ns string, opts NodeOptions) (Result, error) {
	names := make([]string, opts.StaticPods)
	files := make([]string, opts.StaticPods)
	defer func() {
		for _, f := range files {
			if f != "" {
				os.Remove(f)
			}
		}
	}()
	start := time.Now()
	for i := range names {
		name := "static-" + strconv.Itoa(i)
		names[i] = name + "-" + opts.Node
		manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q},"spec":{"terminationGracePeriodSeconds":1,"containers":[{"name":"sleep","image":"busybox","command":["sleep","3600"]}]}}`, name, ns)
		tmp := filepath.Join(opts.ManifestDir, "."+name+".json")
		if err := os.WriteFile(tmp, []byte(manifest), 0o644); err != nil {
			return Result{}, fmt.Errorf("workload: write manifest: %w", err)
		}
		files[i] = filepath.Join(opts.ManifestDir, "kite-bench-"+name+".json")
		if err := os.Rename(tmp, files[i]); err != nil {
			return Result{}, fmt.Errorf("workload: write manifest: %w", err)
		}
	}
	if err := ph.wait(ctx, names, podRunning, opts.Timeout); err != nil {
		return Result{}, err
	}
	r := Result{Name: "static pod files → all Running", Ops: len(names), Items: len(names), Duration: time.Since(start)}
	r.Rate = rate(r.Ops, r.Duration)
	// Where the time went: a mirror pod appears (bound, it names the
	// node) once the agent has read its file and created it, and runs once
	// the agent has started the container and written the status.
	var mirrored, running latencies
	for _, n := range names {
		mirrored = append(mirrored, ph.at(n, podBound).Sub(start))
		running = append(running, ph.at(n, podRunning).Sub(start))
	}
	r.P50, r.P99 = running.percentile(50), running.percentile(99)
	r.Note = fmt.Sprintf("mirror pods seen: first %s, p50 %s, last %s; Running: first %s", duration(mirrored.percentile(1)),
		duration(mirrored.percentile(50)), duration(mirrored.percentile(100)), duration(running.percentile(1)))
	for i, f := range files {
		os.Remove(f)
		files[i] = ""
	}
	if err := ph.wait(ctx, names, podGone, opts.Timeout); err != nil {
		return Result{}, err
	}
	return r, nil
}

// processMemory is VmRSS, RssAnon and RssFile of /proc/<pid>/status, in
// bytes: the file pages are mostly the binary's, shared with every
// process of it and given back under memory pressure, the anonymous ones
// are the process's own.
func processMemory(pid int) (map[string]float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("workload: agent memory: %w", err)
	}
	mem := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != "VmRSS" && k != "RssAnon" && k != "RssFile" {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			return nil, fmt.Errorf("workload: agent memory: %q: %w", line, err)
		}
		mem[k] = kb * 1024
	}
	if _, ok := mem["VmRSS"]; !ok {
		return nil, fmt.Errorf("workload: agent memory: no VmRSS in /proc/%d/status", pid)
	}
	return mem, nil
}
