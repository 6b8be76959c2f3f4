package watchcache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/storage/etcd/embedded"
	kitecache "github.com/kite-project/kite/storage/watchcache"
)

// Sizes of the core/v1 benchmarks. KITE_BENCH_PODS overrides the largest
// (e.g. 10000 on a machine where seeding 100k pods takes too long).
var listSizes = []int{10_000, 100_000}

func largest() int {
	if v, err := strconv.Atoi(os.Getenv("KITE_BENCH_PODS")); err == nil && v > 0 {
		return v
	}
	return 100_000
}

func TestMain(m *testing.M) {
	klog.SetLogger(logr.Discard())
	if n := largest(); n != 100_000 {
		listSizes = []int{10_000, n}
		if n <= 10_000 {
			listSizes = []int{n}
		}
	}
	code := m.Run()
	fixtureMu.Lock()
	for _, f := range fixtures {
		f.close()
	}
	fixtureMu.Unlock()
	os.Exit(code)
}

// A seeded etcd shared by the benchmarks that only read (list, start-up,
// memory), so that -count=N seeds it once.
type fixture struct {
	client *clientv3.Client
	close  func()
}

var (
	fixtureMu sync.Mutex
	fixtures  = map[int]*fixture{}
)

// seeded returns a client of an etcd holding n small core/v1 pods
// (namespaces ns-0..99, 100 pods per node node-0..), created once.
func seeded(b *testing.B, n int) *clientv3.Client {
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if f, ok := fixtures[n]; ok {
		return f.client
	}
	dir, err := os.MkdirTemp("", "kite-bench-watchcache-")
	if err != nil {
		b.Fatal(err)
	}
	srv, err := embedded.Start(context.Background(), embedded.Options{DataDir: dir, UnsafeNoFsync: true, LogLevel: "fatal"})
	if err != nil {
		b.Fatal(err)
	}
	c, err := srv.Client()
	if err != nil {
		b.Fatal(err)
	}
	f := &fixture{client: c, close: func() { c.Close(); srv.Close(); os.RemoveAll(dir) }}
	start := time.Now()
	// Seeding goes through a store of its own, dropped afterwards.
	seedPods(b, newKiteStore(b, c, corev1Pods), n)
	b.Logf("seeded %d pods in %v", n, time.Since(start).Round(time.Millisecond))
	fixtures[n] = f
	return c
}

// listOpts is a recursive list of all pods, or of one node's pods by the
// spec.nodeName field selector (with the index field set, as the pods
// registry does).
func listOpts(rv, node string) storage.ListOptions {
	p := storage.SelectionPredicate{Label: labels.Everything(), Field: fields.Everything(), GetAttrs: corev1Pods.attrs}
	if node != "" {
		p.Field = fields.OneTermEqualSelector("spec.nodeName", node)
		p.IndexFields = []string{"spec.nodeName"}
	}
	return storage.ListOptions{ResourceVersion: rv, Recursive: true, Predicate: p}
}

// BenchmarkList lists 10k and 100k pods from each cache: all of them, and
// one node's (spec.nodeName=X, 100 pods), at RV "0" and consistent (RV "").
// Both caches are up over the same etcd; each case alternates them.
func BenchmarkList(b *testing.B) {
	for _, n := range listSizes {
		b.Run(fmt.Sprintf("Pods=%d", n), func(b *testing.B) {
			c := seeded(b, n)
			caches := make([]underTest, len(impls))
			for i, im := range impls {
				caches[i] = im.start(b, c, corev1Pods)
			}
			defer func() {
				for _, c := range caches {
					c.stop()
				}
			}()
			nodes := n / podsPerNode
			for _, sel := range []string{"all", "node"} {
				for _, rv := range []string{"0", ""} {
					for i, im := range impls {
						b.Run(fmt.Sprintf("Select=%s/RV=%s/Cache=%s", sel, rvName(rv), im.name), func(b *testing.B) {
							cache := caches[i]
							ctx := context.Background()
							want := n
							if sel == "node" {
								want = podsPerNode
							}
							b.ReportAllocs()
							fallbacks := cache.store.lists.Load()
							b.ResetTimer()
							for j := 0; j < b.N; j++ {
								node := ""
								if sel == "node" {
									node = nodeName(j % nodes)
								}
								list := &corev1.PodList{}
								if err := cache.GetList(ctx, podPrefix, listOpts(rv, node), list); err != nil {
									b.Fatal(err)
								}
								if len(list.Items) != want {
									b.Fatalf("listed %d pods, want %d", len(list.Items), want)
								}
							}
							// Lists the cache passed on to etcd.
							b.ReportMetric(float64(cache.store.lists.Load()-fallbacks)/float64(b.N), "etcd-lists/op")
						})
					}
					// Kite's ListCached: the same list with the cache's
					// CachedObjects as items instead of a typed PodList (what
					// Kite's list encoder uses), for comparison with the rows
					// above; upstream has no equivalent.
					b.Run(fmt.Sprintf("Select=%s/RV=%s/Cache=kite-ListCached", sel, rvName(rv)), func(b *testing.B) {
						kc, ok := caches[0].Interface.(*kitecache.Cache)
						if !ok {
							b.Skip("not Kite's cache")
						}
						ctx := context.Background()
						want := n
						if sel == "node" {
							want = podsPerNode
						}
						b.ReportAllocs()
						b.ResetTimer()
						for j := 0; j < b.N; j++ {
							node := ""
							if sel == "node" {
								node = nodeName(j % nodes)
							}
							list, err := kc.ListCached(ctx, podPrefix, listOpts(rv, node))
							if err != nil {
								b.Fatal(err)
							}
							if len(list.Items) != want {
								b.Fatalf("listed %d pods, want %d", len(list.Items), want)
							}
						}
					})
				}
			}
		})
	}
}

func rvName(rv string) string {
	if rv == "" {
		return "consistent"
	}
	return rv
}

// BenchmarkCacheStart starts each cache over 100k stored pods (a fresh
// store and cache each time) and reports the time until it is ready
// (ns/op, and start-s) and the live heap it added, per pod (heap-B/pod:
// runtime.ReadMemStats after GC, before the store is built... after the
// cache is ready).
func BenchmarkCacheStart(b *testing.B) {
	n := largest()
	b.Run(fmt.Sprintf("Pods=%d", n), func(b *testing.B) {
		c := seeded(b, n)
		for _, im := range impls {
			b.Run("Cache="+im.name, func(b *testing.B) {
				var total time.Duration
				var heap float64
				for range b.N {
					b.StopTimer()
					// The previous iteration's cache may still be
					// reachable from goroutines that end after Stop.
					before := settledHeap()
					store := im.store(b, c, corev1Pods)
					b.StartTimer()
					start := time.Now()
					cache := im.cache(b, store, corev1Pods)
					total += time.Since(start)
					b.StopTimer()
					after := heapAfterGC()
					heap += float64(int64(after)-int64(before)) / float64(n)
					writeHeapProfile(b, im.name)
					cache.stop()
					b.StartTimer()
				}
				b.ReportMetric(total.Seconds()/float64(b.N), "start-s")
				b.ReportMetric(heap/float64(b.N), "heap-B/pod")
			})
		}
	})
}

// writeHeapProfile writes the live heap, with the cache just started, to
// $KITE_BENCH_HEAPPROFILE/heap-<impl>.pprof when that variable names a
// directory (go tool pprof -sample_index=inuse_space shows what each cache
// keeps per pod).
func writeHeapProfile(b *testing.B, name string) {
	dir := os.Getenv("KITE_BENCH_HEAPPROFILE")
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, "heap-"+name+".pprof"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// now is a monotonic clock in nanoseconds since the process began.
var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

// percentile returns the p-th percentile (0..100) of sorted durations.
func percentile(sorted []int64, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return time.Duration(sorted[i])
}

// currentRV is the resourceVersion the cache is at (a list at RV "0").
func currentRV(b *testing.B, cache storage.Interface) string {
	list := &corev1.PodList{}
	opts := listOpts("0", nodeName(1<<20)) // a node without pods: cheap
	if err := cache.GetList(context.Background(), podPrefix, opts, list); err != nil {
		b.Fatal(err)
	}
	return list.ResourceVersion
}

// seq is the sequence number a benchmark's pod name carries ("p-<seq>").
func seq(obj any) (int, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, false
	}
	name := m.GetName()
	if len(name) < 3 || name[:2] != "p-" {
		return 0, false
	}
	i, err := strconv.Atoi(name[2:])
	return i, err == nil
}

// writeEvents creates pods p-0..p-<events-1> in namespace ns through the
// cache with the given number of parallel writers, recording when each
// write began and ended. rate > 0 paces the writes: write i begins no
// earlier than i/rate seconds after the first.
func writeEvents(b *testing.B, cache storage.Interface, ns, node string, events, writers int, rate float64) (began, ended []int64) {
	began, ended = make([]int64, events), make([]int64, events)
	start := now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := &corev1.Pod{}
			for {
				i := int(next.Add(1)) - 1
				if i >= events {
					return
				}
				p := smallPod(i, ns, "p-"+strconv.Itoa(i), node)
				key, _ := podKey(p)
				if rate > 0 {
					if d := start + int64(float64(i)/rate*1e9) - now(); d > 0 {
						time.Sleep(time.Duration(d))
					}
				}
				began[i] = now()
				if err := cache.Create(context.Background(), key, p, out, 0); err != nil {
					failed.Store(err)
					return
				}
				ended[i] = now()
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		b.Fatalf("write: %v", err)
	}
	return began, ended
}

// BenchmarkWatchFanout writes 1 000 pods (16 parallel writers, as fast as
// they can or at KITE_BENCH_FANOUT_RATE events/s) while W
// watchers of all pods (no selector: every event goes to every watcher)
// consume their result channels, and reports deliveries/s (W x 1 000 over
// the time from the first write to the last delivery), the p50/p99 of the
// latency from an event's write to its delivery to the last watcher, and
// how many watchers were ended (too slow) instead of served.
func BenchmarkWatchFanout(b *testing.B) {
	const events = 1000
	for _, watchers := range fanoutWatchers {
		name := fmt.Sprintf("Events=%d/Watchers=%d", events, watchers)
		if fanoutRate > 0 {
			name += fmt.Sprintf("/Rate=%g", fanoutRate)
		}
		b.Run(name, func(b *testing.B) {
			c := startEtcd(b)
			seedPods(b, newKiteStore(b, c, corev1Pods), 1000)
			for _, im := range impls {
				b.Run("Cache="+im.name, func(b *testing.B) {
					cache := im.start(b, c, corev1Pods)
					defer cache.stop()
					var lat []int64
					var deliveries, ended int64
					var elapsed time.Duration
					for round := range b.N {
						r := fanoutRound(b, cache, fmt.Sprintf("fanout-%s-%d-%d-%d", im.name, watchers, round, time.Now().UnixNano()%1e6), watchers, events, fanoutRate)
						lat = append(lat, r.lastLatency...)
						deliveries += r.deliveries
						ended += int64(r.ended)
						elapsed += r.elapsed
					}
					slices.Sort(lat)
					b.ReportMetric(float64(deliveries)/elapsed.Seconds(), "deliveries/s")
					b.ReportMetric(float64(percentile(lat, 50))/1e6, "p50-last-ms")
					b.ReportMetric(float64(percentile(lat, 99))/1e6, "p99-last-ms")
					b.ReportMetric(float64(ended)/float64(b.N), "ended-watchers")
				})
			}
		})
	}
}

type fanoutResult struct {
	lastLatency []int64 // per event: write began -> delivered to the last watcher
	deliveries  int64
	ended       int
	elapsed     time.Duration // first write began -> last delivery
}

func fanoutRound(b *testing.B, cache storage.Interface, ns string, watchers, events int, rate float64) fanoutResult {
	b.StopTimer()
	rv := currentRV(b, cache)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	arrivals := make([][]int64, watchers)
	var wg sync.WaitGroup
	var ended, delivered atomic.Int64
	var why atomic.Value // the first watcher's reason to end early
	for w := range watchers {
		wi, err := cache.Watch(ctx, podPrefix, storage.ListOptions{ResourceVersion: rv, Recursive: true, Predicate: storage.Everything})
		if err != nil {
			b.Fatal(err)
		}
		got := make([]int64, events)
		arrivals[w] = got
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer wi.Stop()
			n := 0
			for ev := range wi.ResultChan() {
				switch ev.Type {
				case watch.Error:
					ended.Add(1)
					why.CompareAndSwap(nil, fmt.Sprintf("error event after %d events: %v", n, ev.Object))
					return
				case watch.Added:
					if i, ok := seq(ev.Object); ok && i < events && got[i] == 0 {
						got[i] = now()
						n++
						delivered.Add(1)
						if n == events {
							return
						}
					}
				}
			}
			ended.Add(1) // closed before all events arrived
			why.CompareAndSwap(nil, fmt.Sprintf("result channel closed after %d events", n))
		}()
	}
	b.StartTimer()
	began, _ := writeEvents(b, cache, ns, nodeName(0), events, 16, rate)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("fan-out: %d of %d deliveries after 5 min", delivered.Load(), int64(watchers*events))
	}
	b.StopTimer()
	r := fanoutResult{deliveries: delivered.Load(), ended: int(ended.Load())}
	if r.ended > 0 {
		b.Logf("%d of %d watchers ended early; first: %v", r.ended, watchers, why.Load())
	}
	first := slices.Min(began)
	var last int64
	for i := range events {
		var max int64
		for w := range watchers {
			if t := arrivals[w][i]; t > max {
				max = t
			}
		}
		if max > 0 {
			r.lastLatency = append(r.lastLatency, max-began[i])
		}
		if max > last {
			last = max
		}
	}
	r.elapsed = time.Duration(last - first)
	b.StartTimer()
	return r
}

// BenchmarkWriteToEvent writes 1 000 pods one after another (about as
// fast as etcd takes them, one writer) with one watcher, of all pods or of
// the written pods' node (spec.nodeName=X), and reports the p50/p99 of the
// time from the start of each write to the watcher receiving its event
// (write-p50/p99-ms), and from the write's return (commit-p50/p99-ms; the
// share of the cache alone, 0 when the event came first).
func BenchmarkWriteToEvent(b *testing.B) {
	const events = 1000
	c := startEtcd(b)
	seedPods(b, newKiteStore(b, c, corev1Pods), 1000)
	for _, sel := range []string{"all", "node"} {
		for _, im := range impls {
			b.Run(fmt.Sprintf("Watcher=%s/Cache=%s", sel, im.name), func(b *testing.B) {
				cache := im.start(b, c, corev1Pods)
				defer cache.stop()
				var fromBegin, fromEnd []int64
				for round := range b.N {
					b.StopTimer()
					node := fmt.Sprintf("latency-%s-%s-%d-%d", sel, im.name, round, time.Now().UnixNano()%1e6)
					watchNode := ""
					if sel == "node" {
						watchNode = node
					}
					opts := listOpts(currentRV(b, cache), watchNode)
					ctx, cancel := context.WithCancel(context.Background())
					w, err := cache.Watch(ctx, podPrefix, opts)
					if err != nil {
						b.Fatal(err)
					}
					got := make([]int64, events)
					done := make(chan error, 1)
					go func() {
						n := 0
						for ev := range w.ResultChan() {
							if ev.Type == watch.Error {
								done <- fmt.Errorf("watch error: %v", ev.Object)
								return
							}
							if i, ok := seq(ev.Object); ok && ev.Type == watch.Added && got[i] == 0 {
								got[i] = now()
								if n++; n == events {
									done <- nil
									return
								}
							}
						}
						done <- fmt.Errorf("watch closed after %d events", n)
					}()
					b.StartTimer()
					began, ended := writeEvents(b, cache, node, node, events, 1, 0)
					select {
					case err := <-done:
						if err != nil {
							b.Fatal(err)
						}
					case <-time.After(time.Minute):
						b.Fatal("events missing after a minute")
					}
					b.StopTimer()
					w.Stop()
					cancel()
					for i := range events {
						fromBegin = append(fromBegin, got[i]-began[i])
						fromEnd = append(fromEnd, max(0, got[i]-ended[i]))
					}
					b.StartTimer()
				}
				slices.Sort(fromBegin)
				slices.Sort(fromEnd)
				b.ReportMetric(float64(percentile(fromBegin, 50))/1e6, "write-p50-ms")
				b.ReportMetric(float64(percentile(fromBegin, 99))/1e6, "write-p99-ms")
				b.ReportMetric(float64(percentile(fromEnd, 50))/1e6, "commit-p50-ms")
				b.ReportMetric(float64(percentile(fromEnd, 99))/1e6, "commit-p99-ms")
			})
		}
	}
}

// fanoutRate paces BenchmarkWatchFanout's writes, in events per second;
// 0 (the default) writes as fast as 16 writers can. KITE_BENCH_FANOUT_RATE
// sets it.
var fanoutRate, _ = strconv.ParseFloat(os.Getenv("KITE_BENCH_FANOUT_RATE"), 64)

// fanoutWatchers are the watcher counts of BenchmarkWatchFanout;
// KITE_BENCH_WATCHERS (comma-separated) overrides them.
var fanoutWatchers = func() []int {
	var ws []int
	for _, f := range strings.Split(os.Getenv("KITE_BENCH_WATCHERS"), ",") {
		if w, err := strconv.Atoi(f); err == nil && w > 0 {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		return []int{1000, 10_000}
	}
	return ws
}()
