package workload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// ClusterOptions size the workloads of `kite bench cluster`: what a user
// of kubectl waits for on a cluster with at least one node whose agent
// runs pods. The zero value of a field means its default.
type ClusterOptions struct {
	// Namespace, created and deleted by RunCluster; "" means a generated
	// "kite-bench-cluster-" name.
	Namespace string
	// Pods are created unbound one after another, as kubectl run makes
	// them, each until a watch sees it Ready (default 50).
	Pods int
	// Execs runs of `true` in one pod, one after another (default 20).
	Execs int
	// LogBytes is the size of the log that is read through pods/log
	// (default 100 MB, in lines of 100 bytes).
	LogBytes int64
	// LogReads of the whole log, one after another (default 3).
	LogReads int
	// Timeout bounds each wait for a pod (default 2 min).
	Timeout time.Duration
	// Log, if set, gets one line as each workload starts.
	Log io.Writer
}

// logLine is the length of each line of the log pod's output, its
// newline included.
const logLine = 100

func (o ClusterOptions) withDefaults() (ClusterOptions, error) {
	if o.Pods == 0 {
		o.Pods = 50
	}
	if o.Execs == 0 {
		o.Execs = 20
	}
	if o.LogBytes == 0 {
		o.LogBytes = 100_000_000
	}
	if o.LogReads == 0 {
		o.LogReads = 3
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Pods < 0 || o.Execs < 0 || o.LogReads < 0 || o.Timeout < 0 {
		return o, errors.New("workload: pod, exec and log read counts and the timeout must not be negative")
	}
	if o.LogBytes < logLine {
		return o, fmt.Errorf("workload: a log of %d bytes is less than one %d-byte line", o.LogBytes, logLine)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o, nil
}

// unboundPod is what `kubectl run NAME --image=busybox --command --
// command...` makes (no node: the scheduler places it), with a short grace
// period.
func unboundPod(name string, restart v1.RestartPolicy, command ...string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"run": name}},
		Spec: v1.PodSpec{
			RestartPolicy:                 restart,
			TerminationGracePeriodSeconds: new(int64(1)),
			Containers:                    []v1.Container{{Name: name, Image: "busybox", Command: command}},
		},
	}
}

// RunCluster runs the cluster workloads against the server of cfg: pods
// created unbound one at a time, each until a watch sees it Ready
// (p50/p99 of create → Ready, scheduling included); `true` executed in
// one of them through pods/exec as kubectl exec does (WebSocket, SPDY as
// the fallback; p50/p99 of the round trip); a pod that writes
// opts.LogBytes to stdout and exits, whose log is then read in full
// through pods/log opts.LogReads times (MB/s).
func RunCluster(ctx context.Context, cfg *rest.Config, opts ClusterOptions) (_ *Report, err error) {
	if opts, err = opts.withDefaults(); err != nil {
		return nil, err
	}
	cfg, client, err := unlimitedClient(cfg)
	if err != nil {
		return nil, err
	}
	report := &Report{Server: cfg.Host, ContentType: cfg.ContentType, Started: time.Now()}
	ns, err := createNamespace(ctx, client, opts.Namespace, "kite-bench-cluster-")
	if err != nil {
		return nil, err
	}
	report.Options = Settings{Namespace: ns.Name, Pods: opts.Pods}
	report.Title = fmt.Sprintf("server %s; %d pods run one at a time, %d execs, a %d-byte log read %d times; namespace %s",
		cfg.Host, opts.Pods, opts.Execs, opts.LogBytes, opts.LogReads, ns.Name)
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
	c := clusterRun{client: client, cfg: cfg, ns: ns.Name, ph: ph, opts: opts}
	for _, step := range []func(context.Context) (Result, error){c.runToReady, c.exec, c.logs} {
		r, err := step(ctx)
		if err != nil {
			return nil, err
		}
		if r.Ops > 0 {
			report.Results = append(report.Results, r)
		}
	}
	return report, nil
}

// clusterRun is one RunCluster's state: the first Ready pod is where the
// execs run.
type clusterRun struct {
	client kubernetes.Interface
	cfg    *rest.Config
	ns     string
	ph     *phases
	opts   ClusterOptions
	ready  string
}

func (c *clusterRun) runToReady(ctx context.Context) (Result, error) {
	fmt.Fprintf(c.opts.Log, "kite bench cluster: %d pods run one at a time\n", c.opts.Pods)
	pods := c.client.CoreV1().Pods(c.ns)
	var lat, bound, running latencies
	start := time.Now()
	for i := range c.opts.Pods {
		name := "run-" + strconv.Itoa(i)
		t0 := time.Now()
		if _, err := pods.Create(ctx, unboundPod(name, v1.RestartPolicyAlways, "sleep", "3600"), metav1.CreateOptions{}); err != nil {
			return Result{}, fmt.Errorf("workload: create pod %s: %w", name, err)
		}
		if err := c.ph.wait(ctx, []string{name}, podReady, c.opts.Timeout); err != nil {
			return Result{}, err
		}
		lat = append(lat, c.ph.at(name, podReady).Sub(t0))
		bound = append(bound, c.ph.at(name, podBound).Sub(t0))
		running = append(running, c.ph.at(name, podRunning).Sub(t0))
		if c.ready == "" {
			c.ready = name
		}
	}
	r := Result{Name: "kubectl run → Ready (unbound, one at a time)", Ops: c.opts.Pods, Items: c.opts.Pods, Duration: time.Since(start)}
	r.Rate = rate(r.Ops, r.Duration)
	lat.fill(&r)
	r.Note = fmt.Sprintf("create → bound: p50 %s, p99 %s; → Running: p50 %s, p99 %s", duration(bound.percentile(50)), duration(bound.percentile(99)),
		duration(running.percentile(50)), duration(running.percentile(99)))
	return r, nil
}

func (c *clusterRun) exec(ctx context.Context) (Result, error) {
	if c.opts.Execs == 0 {
		return Result{}, nil
	}
	if c.ready == "" {
		// No pods were asked for: run one to exec in.
		c.ready = "exec"
		if _, err := c.client.CoreV1().Pods(c.ns).Create(ctx, unboundPod(c.ready, v1.RestartPolicyAlways, "sleep", "3600"), metav1.CreateOptions{}); err != nil {
			return Result{}, fmt.Errorf("workload: create pod %s: %w", c.ready, err)
		}
		if err := c.ph.wait(ctx, []string{c.ready}, podReady, c.opts.Timeout); err != nil {
			return Result{}, err
		}
	}
	fmt.Fprintf(c.opts.Log, "kite bench cluster: %d execs of true in pod %s\n", c.opts.Execs, c.ready)
	u := c.client.CoreV1().RESTClient().Post().Namespace(c.ns).Resource("pods").Name(c.ready).SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Command: []string{"true"}, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	var lat latencies
	start := time.Now()
	for range c.opts.Execs {
		t0 := time.Now()
		// A new executor each time, as each kubectl exec is a new process.
		ws, err := remotecommand.NewWebSocketExecutor(c.cfg, "GET", u.String())
		if err != nil {
			return Result{}, fmt.Errorf("workload: exec: %w", err)
		}
		spdy, err := remotecommand.NewSPDYExecutor(c.cfg, "POST", u)
		if err != nil {
			return Result{}, fmt.Errorf("workload: exec: %w", err)
		}
		ex, err := remotecommand.NewFallbackExecutor(ws, spdy, httpstream.IsUpgradeFailure)
		if err != nil {
			return Result{}, fmt.Errorf("workload: exec: %w", err)
		}
		var out bytes.Buffer
		if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out}); err != nil {
			return Result{}, fmt.Errorf("workload: exec true in pod %s: %w (output %q)", c.ready, err, out.String())
		}
		lat = append(lat, time.Since(t0))
	}
	r := Result{Name: "kubectl exec -- true (round trip)", Ops: c.opts.Execs, Duration: time.Since(start)}
	r.Rate = rate(r.Ops, r.Duration)
	lat.fill(&r)
	return r, nil
}

func (c *clusterRun) logs(ctx context.Context) (Result, error) {
	if c.opts.LogReads == 0 {
		return Result{}, nil
	}
	lines := c.opts.LogBytes / logLine
	size := lines * logLine
	fmt.Fprintf(c.opts.Log, "kite bench cluster: a pod writes %d bytes, its log read %d times\n", size, c.opts.LogReads)
	name := "log"
	line := strings.Repeat("x", logLine-1)
	pod := unboundPod(name, v1.RestartPolicyNever, "sh", "-c", fmt.Sprintf("yes %s | head -n %d", line, lines))
	if _, err := c.client.CoreV1().Pods(c.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return Result{}, fmt.Errorf("workload: create pod %s: %w", name, err)
	}
	if err := c.ph.wait(ctx, []string{name}, podSucceeded, c.opts.Timeout); err != nil {
		return Result{}, err
	}
	var lat latencies
	var read int64
	start := time.Now()
	for range c.opts.LogReads {
		t0 := time.Now()
		n, err := c.readLog(ctx, name)
		if err != nil {
			return Result{}, err
		}
		lat = append(lat, time.Since(t0))
		read += n
	}
	r := Result{Name: "kubectl logs of the whole log (bytes/s in the note)", Ops: c.opts.LogReads, Items: int(size), Duration: time.Since(start)}
	r.Rate = rate(r.Ops, r.Duration)
	lat.fill(&r)
	best := lat.percentile(0)
	r.Note = fmt.Sprintf("%.0f MB/s overall, best %.0f MB/s; %d of %d bytes per read", float64(read)/1e6/r.Duration.Seconds(),
		float64(read)/float64(c.opts.LogReads)/1e6/best.Seconds(), read/int64(c.opts.LogReads), size)
	return r, nil
}

// readLog reads pod name's whole log through the API server and returns
// its length.
func (c *clusterRun) readLog(ctx context.Context, name string) (int64, error) {
	rc, err := c.client.CoreV1().Pods(c.ns).GetLogs(name, &v1.PodLogOptions{}).Stream(ctx)
	if err != nil {
		return 0, fmt.Errorf("workload: logs of pod %s: %w", name, err)
	}
	defer rc.Close()
	n, err := io.CopyBuffer(io.Discard, rc, make([]byte, 256<<10))
	if err != nil {
		return n, fmt.Errorf("workload: logs of pod %s after %d bytes: %w", name, n, err)
	}
	return n, nil
}
