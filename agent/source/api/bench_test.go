package api

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/config"
	"github.com/kite-project/kite/agent/kubetypes"
)

// BenchmarkBoundPodToAdd measures a pod bound to the node through the API
// (the binding subresource, as a scheduler does) → its ADD leaving
// PodConfig.Updates(), through the API server's watch, the api source and
// the merge. Run with -benchtime=100x for the 100 pods; the pods
// stay, so the node's set grows to b.N pods. Reports p50, p99 and max of
// bind-to-ADD, and the p50 of the bind request alone (included in them).
func BenchmarkBoundPodToAdd(b *testing.B) {
	node := unique("bench-node")
	cfg := shared.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000 // the client must not be what is measured
	cs := clientset(b, cfg)
	ns := createNamespace(b, cs, "bench")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	pc, err := config.New(config.Options{Sources: []string{kubetypes.APISource}})
	if err != nil {
		b.Fatal(err)
	}
	src, err := New(Options{Client: cs.CoreV1().RESTClient(), NodeName: node})
	if err != nil {
		b.Fatal(err)
	}
	added := make(chan string, 1024)
	done := make(chan struct{}, 3)
	go func() { defer func() { done <- struct{}{} }(); pc.Run(ctx) }()
	go func() { defer func() { done <- struct{}{} }(); src.Run(ctx, pc.Input()) }()
	go func() {
		defer func() { done <- struct{}{} }()
		for u := range pc.Updates() {
			if u.Op != kubetypes.ADD {
				continue
			}
			for _, p := range u.Pods {
				added <- p.Name
			}
		}
	}()
	defer func() {
		cancel()
		for range 3 {
			<-done
		}
	}()

	// Unbound pods, made before the clock starts.
	for i := range b.N {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, newPod(ns, fmt.Sprintf("p%d", i), "", "image"), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	// Wait for the source's first report (an empty ADD).
	for deadline := time.Now().Add(waitTimeout); !pc.Seen(kubetypes.APISource); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("the api source did not report within %v", waitTimeout)
		}
	}

	latencies := make([]time.Duration, 0, b.N)
	binds := make([]time.Duration, 0, b.N) // the API write alone, for scale
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("p%d", i)
		start := time.Now()
		binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Target: v1.ObjectReference{Kind: "Node", Name: node}}
		if err := cs.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		binds = append(binds, time.Since(start))
		for got := ""; got != name; {
			select {
			case got = <-added:
			case <-time.After(waitTimeout):
				b.Fatalf("no ADD of %s within %v", name, waitTimeout)
			}
		}
		latencies = append(latencies, time.Since(start))
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(latencies, 0.50), "p50-ms")
	b.ReportMetric(pct(latencies, 0.99), "p99-ms")
	b.ReportMetric(pct(latencies, 1), "max-ms")
	b.ReportMetric(pct(binds, 0.50), "bind-p50-ms")
}
