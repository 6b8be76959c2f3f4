package agent

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/kubetypes"
)

// BenchmarkBoundPodToAgentAdd is agent/source/api's BenchmarkBoundPodToAdd
// through the whole Agent: a pod bound through the API → its ADD leaving
// the sync loop (api source, merge, mirror filter), with a static pod
// and its mirror on the node as well. Run with -benchtime=100x.
func BenchmarkBoundPodToAgentAdd(b *testing.B) {
	node := unique("bench-node")
	cfg := shared.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000 // the client must not be what is measured
	cs := clientset(b, cfg)
	createNode(b, cs, node)
	ns := createNamespace(b, cs, "bench")
	dir := b.TempDir()
	writeAtomic(b, dir+"/static.yaml", manifest("static", "image"))

	ops := make(chanSyncLoop, 64)
	a, err := New(Options{NodeName: node, RESTConfig: cfg, StaticPodPath: dir, SyncLoop: ops})
	if err != nil {
		b.Fatal(err)
	}
	// Logs (a mirror pod created) would garble the benchmark's output.
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	ran := make(chan struct{})
	go func() { defer close(ran); a.Run(ctx) }()
	added := make(chan string, 1024)
	read := make(chan struct{})
	go func() {
		defer close(read)
		for u := range ops {
			if u.Op == kubetypes.ADD && u.Source == kubetypes.APISource {
				for _, p := range u.Pods {
					added <- p.Name
				}
			}
		}
	}()
	defer func() { cancel(); <-ran; <-read }()

	for i := range b.N {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, newPod(ns, fmt.Sprintf("p%d", i), ""), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for deadline := time.Now().Add(waitTimeout); !a.SeenAllSources(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("sources did not report within %v", waitTimeout)
		}
	}

	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("p%d", i)
		start := time.Now()
		binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Target: v1.ObjectReference{Kind: "Node", Name: node}}
		if err := cs.CoreV1().Pods(ns).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
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
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
}
