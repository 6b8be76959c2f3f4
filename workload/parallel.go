package workload

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// parallel calls op(ctx, i) for i in [0, n) from `workers` goroutines and
// returns each call's latency. The first error cancels the rest and is
// returned; parallel returns only after every goroutine has ended.
func parallel(ctx context.Context, n, workers int, op func(ctx context.Context, i int) error) (latencies, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lat := make(latencies, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range max(1, min(workers, n)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t := time.Now()
				if err := op(ctx, i); err != nil {
					cancel(err)
					return
				}
				lat[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return nil, elapsed, err
	}
	return lat, elapsed, nil
}
