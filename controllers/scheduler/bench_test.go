package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/controllers/scheduler"
)

// BenchmarkSchedule1000PodsOn100Nodes is scheduler_perf's SchedulingBasic
// shape against a real in-process Kite: 1 000 pending pods, 100 nodes,
// timed from the scheduler's start until the last pod is bound; it reports
// pods bound per second. (kube-scheduler cannot run beside it here: no
// binary on the machine, and it is not vendored.)
func BenchmarkSchedule1000PodsOn100Nodes(b *testing.B) {
	const nodes, pods = 100, 1000
	cs := client(b)
	for i := range nodes {
		createNode(b, cs, fmt.Sprintf("bench-%03d", i), "32", 110)
	}
	for b.Loop() {
		b.StopTimer()
		ns := namespace(b, cs)
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for i := range pods {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				createPod(b, cs, ns, fmt.Sprintf("p%04d", i), "100m", "bench-scheduler")
			}()
		}
		wg.Wait()
		s, err := scheduler.New(scheduler.Options{Client: cs, SchedulerName: "bench-scheduler"})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		b.StartTimer()
		start := time.Now()
		go func() { defer close(done); s.Run(ctx) }()
		for {
			list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
			if err != nil {
				b.Fatal(err)
			}
			if len(list.Items) == 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		cancel()
		<-done
		b.ReportMetric(float64(pods)/elapsed.Seconds(), "pods/s")
		// Leave the nodes empty for the next round: no agent confirms a
		// graceful delete here, so force it.
		zero := int64(0)
		if err := cs.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
