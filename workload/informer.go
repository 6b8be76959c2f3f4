package workload

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// SyncInformer starts a client-go pod informer over opts.Namespace,
// opts.Repeats times, and measures the time to HasSynced: what every
// controller pays at start. It uses client-go itself (not Kite's
// listwatch) because that is what the clients of any server run; with
// client-go v0.37 that is the streaming list (WatchList) unless the
// environment turns it off (KUBE_FEATURE_WatchListClient=false).
func SyncInformer(ctx context.Context, client kubernetes.Interface, opts Options) (Result, error) {
	opts, err := opts.ready()
	if err != nil {
		return Result{}, err
	}
	lat, elapsed, err := parallel(ctx, opts.Repeats, 1, func(ctx context.Context, _ int) error {
		return syncOnce(ctx, client, opts)
	})
	if err != nil {
		return Result{}, err
	}
	r := Result{Name: "informer sync", Ops: opts.Repeats, Items: opts.Pods, Duration: elapsed, Rate: rate(opts.Repeats, elapsed), Note: "start to HasSynced"}
	lat.fill(&r)
	return r, nil
}

// syncOnce runs one informer until it has synced, checks it holds every
// pod, and stops it.
func syncOnce(ctx context.Context, client kubernetes.Interface, opts Options) error {
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(opts.Namespace))
	defer factory.Shutdown()
	defer cancel()
	informer := factory.Core().V1().Pods().Informer()
	factory.Start(ctx.Done())
	// cache.WaitForCacheSync polls every 100 ms, coarser than what is
	// measured; poll every millisecond instead.
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !informer.HasSynced() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("informer sync: %w", ctx.Err())
		case <-tick.C:
		}
	}
	if n := len(informer.GetStore().ListKeys()); n != opts.Pods {
		return fmt.Errorf("informer sync: %d pods, want %d", n, opts.Pods)
	}
	return nil
}
