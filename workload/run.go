package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// cleanupTimeout bounds deleting the namespace at the end, also when ctx
// has ended.
const cleanupTimeout = 2 * time.Minute

// Run runs every workload in order against the server of cfg, in a
// namespace it creates and deletes afterwards, and returns what they
// measured. cfg's content type (JSON or protobuf) is the one measured;
// client-side rate limiting is turned off. A workload that fails (a wrong
// count, a server error) ends the run with its error; lost watch events do
// not, they are in the Report.
func Run(ctx context.Context, cfg *rest.Config, opts Options) (_ *Report, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("workload: client: %w", err)
	}
	report := &Report{Server: cfg.Host, ContentType: cfg.ContentType, Started: time.Now()}
	if report.ContentType == "" {
		// client-go's typed clients ask for protobuf when no content
		// type is set.
		report.ContentType = "application/vnd.kubernetes.protobuf (client-go default)"
	}

	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.Namespace}}
	if ns.Name == "" {
		ns.GenerateName = "kite-bench-"
	}
	fmt.Fprintf(opts.Log, "kite bench: create namespace %s%s\n", ns.Name, ns.GenerateName)
	if ns, err = client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("workload: create namespace: %w", err)
	}
	opts.Namespace = ns.Name
	report.Options = Settings{
		Namespace: opts.Namespace, Pods: opts.Pods, Nodes: opts.Nodes, Writers: opts.Writers,
		Watchers: opts.Watchers, Updates: opts.Updates, Repeats: opts.Repeats, Decode: opts.Decode,
	}
	defer func() {
		// Clean up also after a failure or an interrupt, on a context
		// of its own.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		fmt.Fprintf(opts.Log, "kite bench: delete namespace %s\n", opts.Namespace)
		r, cerr := cleanup(cctx, client, opts)
		if err == nil && cerr == nil {
			report.Results = append(report.Results, r)
		}
		err = errors.Join(err, cerr)
	}()

	rss0, heap0, memErr := scrapeMemory(ctx, client)
	steps := []struct {
		name string
		run  func() (Result, error)
	}{
		{"create pods", func() (Result, error) { return CreatePods(ctx, client, opts) }},
		{"memory", func() (Result, error) {
			if memErr == nil {
				var rss1, heap1 float64
				if rss1, heap1, memErr = scrapeMemory(ctx, client); memErr == nil {
					report.Memory = memoryDelta(opts.Pods, rss0, heap0, rss1, heap1)
				}
			}
			if memErr != nil {
				report.Memory = &Memory{Pods: opts.Pods, NotExposedNote: memErr.Error()}
			}
			return Result{}, nil
		}},
		{"list all from cache", func() (Result, error) { return ListAll(ctx, client, opts, "0") }},
		{"list all, consistent", func() (Result, error) { return ListAll(ctx, client, opts, "") }},
		{"list by node", func() (Result, error) { return ListByNode(ctx, client, opts) }},
		{"paginate", func() (Result, error) { return Paginate(ctx, client, opts, 500) }},
		{"watch fan-out, all namespaces", func() (Result, error) { return FanOut(ctx, client, opts, AllNamespaces) }},
		{"watch fan-out, one node each", func() (Result, error) { return FanOut(ctx, client, opts, OneNode) }},
		{"informer sync", func() (Result, error) { return SyncInformer(ctx, client, opts) }},
		{"memory at the end", func() (Result, error) {
			if m := report.Memory; m != nil && m.NotExposedNote == "" {
				if rss, heap, err := scrapeMemory(ctx, client); err == nil {
					m.atEnd(rss, heap)
				}
			}
			return Result{}, nil
		}},
	}
	for _, step := range steps {
		fmt.Fprintf(opts.Log, "kite bench: %s\n", step.name)
		r, err := step.run()
		if err != nil {
			return report, err
		}
		if r.Name != "" {
			report.Results = append(report.Results, r)
		}
	}
	return report, nil
}

// cleanup deletes the pods (at once, grace period 0) and then the
// namespace, and waits until the namespace is gone.
func cleanup(ctx context.Context, client kubernetes.Interface, opts Options) (Result, error) {
	r, err := DeletePods(ctx, client, opts)
	if err != nil {
		return r, err
	}
	namespaces := client.CoreV1().Namespaces()
	if err := namespaces.Delete(ctx, opts.Namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return r, fmt.Errorf("workload: delete namespace %s: %w", opts.Namespace, err)
	}
	for {
		_, err := namespaces.Get(ctx, opts.Namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return r, nil
		}
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("workload: namespace %s still there: %w", opts.Namespace, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
