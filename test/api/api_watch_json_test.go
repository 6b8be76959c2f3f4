package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// rawWatch opens a watch of the pods of ns (all namespaces if ns is "")
// from resourceVersion rv, asking for mediaType, and returns its body.
func rawWatch(ctx context.Context, tb testing.TB, client *http.Client, ns, rv, mediaType string) io.ReadCloser {
	tb.Helper()
	path := "/api/v1/pods"
	if ns != "" {
		path = "/api/v1/namespaces/" + ns + "/pods"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(shared.URL(), "/")+path+"?watch=1&resourceVersion="+rv, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Accept", mediaType)
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatalf("watch: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		tb.Fatalf("watch: %s: %s", resp.Status, body)
	}
	return resp.Body
}

// TestJSONWatchEventsAndSharedBytes watches pods in JSON with client-go
// and with two raw HTTP watchers, creates, updates and deletes a pod whose
// annotations hold characters JSON escapes, and checks that client-go
// decodes exactly those events with the right objects, that both raw
// watchers receive identical bytes, and that every frame is one line of
// compact JSON as encoding/json writes a metav1.WatchEvent.
func TestJSONWatchEventsAndSharedBytes(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	pods := client.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	cfg := config(t)
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	jsonClient := kubernetes.NewForConfigOrDie(cfg)
	w, err := jsonClient.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("client-go watch: %v", err)
	}
	defer w.Stop()
	httpClient, err := rest.HTTPClientFor(config(t))
	if err != nil {
		t.Fatal(err)
	}
	var raws [2]*bufio.Reader
	for i := range raws {
		body := rawWatch(ctx, t, httpClient, ns, list.ResourceVersion, "application/json")
		defer body.Close()
		raws[i] = bufio.NewReader(body)
	}

	annotation := `<b>&amp;</b> "quoted" line` + "\u2028" + `para é ✓`
	pod := testPod("escaped")
	pod.Annotations = map[string]string{"note": annotation}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Labels["app"] = "changed"
	updated, err := pods.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	type want struct {
		typ   watch.EventType
		app   string
		minRV string
	}
	wants := []want{
		{watch.Added, "web", created.ResourceVersion},
		{watch.Modified, "changed", updated.ResourceVersion},
		{watch.Deleted, "changed", updated.ResourceVersion},
	}

	// client-go's JSON watch decoder.
	lastRV := ""
	for i, want := range wants {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("client-go watch closed after %d events", i)
			}
			p, ok := ev.Object.(*v1.Pod)
			if !ok {
				t.Fatalf("event %d: %s %T, want a *v1.Pod", i, ev.Type, ev.Object)
			}
			if ev.Type != want.typ || p.Name != "escaped" || p.Namespace != ns || p.Labels["app"] != want.app || p.Annotations["note"] != annotation {
				t.Errorf("event %d: %s %s/%s app=%q note=%q, want %s %s/escaped app=%q note=%q",
					i, ev.Type, p.Namespace, p.Name, p.Labels["app"], p.Annotations["note"], want.typ, ns, want.app, annotation)
			}
			if i < 2 && p.ResourceVersion != want.minRV {
				t.Errorf("event %d: resourceVersion %s, want %s", i, p.ResourceVersion, want.minRV)
			}
			if p.ResourceVersion == lastRV {
				t.Errorf("event %d: resourceVersion %s repeats", i, p.ResourceVersion)
			}
			lastRV = p.ResourceVersion
		case <-ctx.Done():
			t.Fatalf("client-go watch: timed out after %d events", i)
		}
	}

	// Two raw watchers: the same bytes, frame by frame.
	for i, want := range wants {
		var lines [2][]byte
		for j, r := range raws {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("raw watcher %d, event %d: %v", j, i, err)
			}
			lines[j] = line
		}
		if !bytes.Equal(lines[0], lines[1]) {
			t.Errorf("event %d: watchers received different bytes:\n%q\n%q", i, lines[0], lines[1])
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, lines[0]); err != nil {
			t.Fatalf("event %d: not JSON: %v: %q", i, err, lines[0])
		}
		compact.WriteByte('\n')
		if !bytes.Equal(compact.Bytes(), lines[0]) {
			t.Errorf("event %d: frame is not compact JSON on one line: %q", i, lines[0])
		}
		var ev metav1.WatchEvent
		if err := json.Unmarshal(lines[0], &ev); err != nil {
			t.Fatal(err)
		}
		var p v1.Pod
		if err := json.Unmarshal(ev.Object.Raw, &p); err != nil {
			t.Fatal(err)
		}
		if ev.Type != string(want.typ) || p.Name != "escaped" || p.Labels["app"] != want.app || p.Annotations["note"] != annotation {
			t.Errorf("raw event %d: %s %s app=%q, want %s escaped app=%q", i, ev.Type, p.Name, p.Labels["app"], want.typ, want.app)
		}
		prefix := fmt.Sprintf(`{"type":%q,"object":{"kind":"Pod","apiVersion":"v1",`, want.typ)
		if !bytes.HasPrefix(lines[0], []byte(prefix)) {
			t.Errorf("raw event %d starts %.80q, want %q", i, lines[0], prefix)
		}
		if bytes.Contains(lines[0], []byte("<")) || !bytes.Contains(lines[0], []byte(`\u003cb\u003e\u0026amp;\u003c/b\u003e`)) || !bytes.Contains(lines[0], []byte(`\u2028`)) {
			t.Errorf("raw event %d: HTML characters not escaped as encoding/json does: %q", i, lines[0])
		}
	}
}

// BenchmarkWatchFanOut measures watch delivery from the server: W watchers
// of the benchmark's namespace (not all namespaces: the deletion of an
// earlier run's namespace would add its events) read raw frames (JSON lines or length-delimited
// protobuf) without decoding them, so the server's encoding is what is
// measured, while 8 writers update U pods per iteration. deliveries/s is
// events received by all watchers per second of the whole run, and
// cpu-µs/delivery the process's CPU time (server, etcd, clients) per event
// received, which other load on the machine disturbs less.
func BenchmarkWatchFanOut(b *testing.B) {
	const watchers, updates, writers = 300, 100, 8
	for _, mediaType := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		name := "json"
		if strings.Contains(mediaType, "protobuf") {
			name = "protobuf"
		}
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg := config(b)
			cfg.ContentType = "application/vnd.kubernetes.protobuf"
			cfg.QPS, cfg.Burst = -1, -1
			client := kubernetes.NewForConfigOrDie(cfg)
			nsObj, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-"}}, metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			ns := nsObj.Name
			pods := client.CoreV1().Pods(ns)
			var current []*v1.Pod
			for i := range updates {
				p := testPod(fmt.Sprintf("p-%d", i))
				p.Spec.NodeName = fmt.Sprintf("node-%d", i%10)
				p.Annotations = map[string]string{"bench": strings.Repeat("x", 600)}
				created, err := pods.Create(ctx, p, metav1.CreateOptions{})
				if err != nil {
					b.Fatal(err)
				}
				current = append(current, created)
			}
			list, err := pods.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil {
				b.Fatal(err)
			}
			httpClient, err := rest.HTTPClientFor(config(b))
			if err != nil {
				b.Fatal(err)
			}
			var received atomic.Int64
			var wg sync.WaitGroup
			for range watchers {
				body := rawWatch(ctx, b, httpClient, ns, list.ResourceVersion, mediaType)
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer body.Close()
					countFrames(body, mediaType != "application/json", &received)
				}()
			}
			defer func() {
				cancel()
				wg.Wait()
				client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
			}()

			expected := int64(0)
			b.ResetTimer()
			start, cpuStart := time.Now(), processCPU(b)
			for b.Loop() {
				// Writers in parallel, so that writes outpace delivery.
				var writes sync.WaitGroup
				errs := make(chan error, writers)
				for wr := range writers {
					writes.Go(func() {
						for i := wr; i < len(current); i += writers {
							p := current[i]
							p.Labels["round"] = fmt.Sprint(expected)
							updated, err := pods.Update(ctx, p, metav1.UpdateOptions{})
							if err != nil {
								errs <- err
								return
							}
							current[i] = updated
						}
					})
				}
				writes.Wait()
				close(errs)
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
				expected += watchers * updates
				deadline := time.Now().Add(2 * time.Minute)
				for received.Load() < expected {
					if time.Now().After(deadline) {
						b.Fatalf("received %d deliveries, want %d", received.Load(), expected)
					}
					time.Sleep(time.Millisecond)
				}
			}
			elapsed, cpu := time.Since(start), processCPU(b)-cpuStart
			b.StopTimer()
			if got := received.Load(); got != expected {
				b.Fatalf("received %d deliveries, want %d", got, expected)
			}
			b.ReportMetric(float64(expected)/elapsed.Seconds(), "deliveries/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(expected), "cpu-µs/delivery")
		})
	}
}

// processCPU is the CPU time the process (server, etcd, watchers and
// writers) has used so far: less disturbed by other load on the machine
// than wall time.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countFrames counts the events of a watch body until it ends: lines of
// JSON, or length-prefixed protobuf frames.
func countFrames(body io.Reader, protobuf bool, n *atomic.Int64) {
	r := bufio.NewReaderSize(body, 64<<10)
	if !protobuf {
		buf := make([]byte, 64<<10)
		for {
			k, err := r.Read(buf)
			n.Add(int64(bytes.Count(buf[:k], []byte{'\n'})))
			if err != nil {
				return
			}
		}
	}
	var size [4]byte
	for {
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		if _, err := r.Discard(int(binary.BigEndian.Uint32(size[:]))); err != nil {
			return
		}
		n.Add(1)
	}
}
