package watchcache

// Benchmarks of the in-memory paths, fed through the Reflector's seam (the
// sink) so that etcd's speed does not blur them. The side-by-side
// comparison with upstream's cacher lives in bench/.

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	runtimepkg "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"
)

func benchPod(i, nodes int, rv uint64) *example.Pod {
	return &example.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns-" + strconv.Itoa(i%100), Name: "pod-" + strconv.Itoa(i),
			ResourceVersion: strconv.FormatUint(rv, 10),
			Labels:          map[string]string{"app": "a" + strconv.Itoa(i%10)},
		},
		Spec: example.PodSpec{NodeName: "node-" + strconv.Itoa(i%nodes), RestartPolicy: "Always"},
	}
}

// filledCache is a cache (not started: no etcd traffic) holding n pods.
func filledCache(b *testing.B, n, nodes int) *Cache {
	b.Helper()
	_, _, env := testSetup(b)
	c, err := New(Options{
		Store:          env.store,
		ResourcePrefix: podPrefix,
		KeyFunc:        func(obj runtimepkg.Object) (string, error) { return storage.NamespaceKeyFunc(podPrefix, obj) },
		NewFunc:        newPod,
		NewListFunc:    newPodList,
		AttrFunc:       podAttrs,
		Indexers:       storage.IndexerFuncs{"spec.nodeName": podNodeName},
	})
	if err != nil {
		b.Fatal(err)
	}
	objs := make([]runtimepkg.Object, n)
	for i := range objs {
		objs[i] = benchPod(i, nodes, uint64(i+1))
	}
	if err := (sink{c}).Replace(objs, strconv.Itoa(n)); err != nil {
		b.Fatal(err)
	}
	// Run the dispatcher only (no Reflector): watchers get fed by the sink.
	c.wg.Add(1)
	go c.dispatchLoop(c.ctx)
	b.Cleanup(c.Stop)
	return c
}

func BenchmarkGetList(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		c := filledCache(b, n, n/100)
		for _, tt := range []struct {
			name string
			pred storage.SelectionPredicate
		}{
			{"all", storage.Everything},
			{"node", storage.SelectionPredicate{Label: labels.Everything(), Field: fields.OneTermEqualSelector("spec.nodeName", "node-7")}},
		} {
			b.Run(fmt.Sprintf("pods=%d/%s", n, tt.name), func(b *testing.B) {
				ctx := context.Background()
				items := 0
				for b.Loop() {
					list := &example.PodList{}
					if err := c.GetList(ctx, podPrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: tt.pred}, list); err != nil {
						b.Fatal(err)
					}
					items = len(list.Items)
				}
				b.ReportMetric(float64(items), "items/op")
			})
		}
	}
}

// BenchmarkFanOut measures deliveries per second: b.N changes, each offered
// to every watcher (none filters), written as fast as the cache takes them;
// done when every watcher has received every change.
func BenchmarkFanOut(b *testing.B) {
	for _, watchers := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			c := filledCache(b, 1000, 10)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var remaining atomic.Int64
			remaining.Store(int64(b.N) * int64(watchers))
			all := make(chan struct{})
			var wg sync.WaitGroup
			for range watchers {
				w, err := c.Watch(ctx, podPrefix, storage.ListOptions{ResourceVersion: strconv.FormatUint(c.ResourceVersion(), 10), Recursive: true, Predicate: storage.Everything})
				if err != nil {
					b.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ev := range w.ResultChan() {
						if ev.Type != watch.Bookmark && remaining.Add(-1) == 0 {
							close(all)
						}
					}
				}()
			}
			rv := c.ResourceVersion()
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				rv++
				if err := (sink{c}).Update(benchPod(i%1000, 10, rv)); err != nil {
					b.Fatal(err)
				}
			}
			select {
			case <-all:
			case <-time.After(5 * time.Minute):
				b.Fatalf("%d deliveries missing", remaining.Load())
			}
			b.ReportMetric(float64(b.N)*float64(watchers)/time.Since(start).Seconds(), "deliveries/s")
			b.StopTimer()
			if n := c.SlowWatchersEnded(); n != 0 {
				b.Fatalf("%d watchers ended as slow", n)
			}
			cancel()
			wg.Wait()
		})
	}
}

// BenchmarkMemoryPerObject reports the heap the cache holds per pod.
func BenchmarkMemoryPerObject(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := filledCache(b, n, 1000)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/pod")
		runtime.KeepAlive(c)
	}
}

// BenchmarkWriteToWatchEvent measures the time from a write acknowledged
// by etcd to the event at a watcher of the cache (one writer, one
// watcher, fsync off), reporting p50 and p99. The event often arrives
// before the write's own response, hence the nanoseconds.
func BenchmarkWriteToWatchEvent(b *testing.B) {
	ctx, c, _ := testSetup(b)
	w, err := c.Watch(ctx, podPrefix, storage.ListOptions{ResourceVersion: strconv.FormatUint(c.ResourceVersion(), 10), Recursive: true, Predicate: storage.Everything})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pod-" + strconv.Itoa(i)}}
		if err := c.Create(ctx, podKey(pod.Name), pod, &example.Pod{}, 0); err != nil {
			b.Fatal(err)
		}
		acked := time.Now()
		<-w.ResultChan()
		lat = append(lat, time.Since(acked))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}
