package cri

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// BenchmarkBusyBoxCreateToRunning: a busybox pod created through the API
// → the agent reports it Running (the pod's watch shows it), one pod at a
// time, through containerd; p50 and p99 over b.N pods. Each pod is
// deleted (grace 0) before the next.
//
//	go test ./test/cri -run XXX -bench CreateToRunning -benchtime 30x
func BenchmarkBusyBoxCreateToRunning(b *testing.B) {
	a := startAgent(b, "cri-bench", b.TempDir())
	ns := "cri-bench"
	a.cs.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	var lat []time.Duration
	zero := int64(0)
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("bb-%d", i)
		w, err := a.cs.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		_, err = a.cs.CoreV1().Pods(ns).Create(context.Background(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{
			NodeName: a.node, TerminationGracePeriodSeconds: &zero,
			Containers: []v1.Container{{Name: "main", Image: "registry.k8s.io/e2e-test-images/busybox:1.37.0-2", Args: []string{"sleep", "3600"}}},
		}}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		timeout := time.After(60 * time.Second)
	wait:
		for {
			select {
			case ev := <-w.ResultChan():
				if p, ok := ev.Object.(*v1.Pod); ok && ev.Type == watch.Modified && running(p) {
					lat = append(lat, time.Since(start))
					break wait
				}
			case <-timeout:
				b.Fatalf("pod %s not Running within 60 s", name)
			}
		}
		w.Stop()
		b.StopTimer()
		a.cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Milliseconds()), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
