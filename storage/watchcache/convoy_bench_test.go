package watchcache

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

// BenchmarkReadsDuringFanOut measures gets and new watches of a resource
// while every change to it fans out to 10 000 watchers (none filtered, so
// that each change is offered to all of them): a write every 2 ms, fed
// through the Reflector's seam. It reports the p50, p99 and largest
// latency of the gets (one per iteration) and of the watches opened beside
// them. A read that waits for the dispatcher shows here: the dispatcher
// spends milliseconds per change on 10 000 watchers.
func BenchmarkReadsDuringFanOut(b *testing.B) {
	const watchers, pods = 10_000, 1000
	c := filledCache(b, pods, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	opts := func() storage.ListOptions {
		return storage.ListOptions{ResourceVersion: strconv.FormatUint(c.ResourceVersion(), 10), Recursive: true, Predicate: storage.Everything}
	}
	for range watchers {
		w, err := c.Watch(ctx, podPrefix, opts())
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() {
			for range w.ResultChan() {
			}
		})
	}

	// The writer: one change every 2 ms, until the reads are done.
	wg.Go(func() {
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		rv := c.ResourceVersion()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rv++
			if err := (sink{c}).Update(benchPod(i%pods, 10, rv)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	// The watch opener: a new watch (then stopped) every millisecond.
	var watchLat []time.Duration
	wg.Go(func() {
		for ctx.Err() == nil {
			start := time.Now()
			w, err := c.Watch(ctx, podPrefix, opts())
			if err != nil {
				b.Error(err)
				return
			}
			watchLat = append(watchLat, time.Since(start))
			w.Stop()
			drainWatch(w)
			time.Sleep(time.Millisecond)
		}
	})
	time.Sleep(200 * time.Millisecond) // the fan-out is under way

	getLat := make([]time.Duration, 0, b.N)
	out := &example.Pod{}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if err := c.Get(ctx, "/pods/ns-"+strconv.Itoa(i%100)+"/pod-"+strconv.Itoa(i%pods), storage.GetOptions{ResourceVersion: "0"}, out); err != nil {
			b.Fatal(err)
		}
		getLat = append(getLat, time.Since(start))
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	report := func(name string, lat []time.Duration) {
		if len(lat) == 0 {
			return
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), name+"-p50-us")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), name+"-p99-us")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), name+"-max-us")
	}
	report("get", getLat)
	report("watch", watchLat)
}

func drainWatch(w watch.Interface) {
	for range w.ResultChan() {
	}
}
