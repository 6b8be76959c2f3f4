package statefulset_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// BenchmarkStatefulSetOf100 starts an OrderedReady StatefulSet of 100
// replicas, with a claim each, while a goroutine plays the node (marks
// each pod Running and Ready as it appears), and reports the seconds until
// all 100 are Ready: one pod at a time, as upstream.
func BenchmarkStatefulSetOf100(b *testing.B) {
	const n = 100
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cs, ns, _ := start(b)
		playNode(b, cs, ns)
		b.StartTimer()
		start := time.Now()
		if _, err := cs.AppsV1().StatefulSets(ns).Create(context.Background(), newSet("web", n), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "web", metav1.GetOptions{})
			return err == nil && s.Status.ReadyReplicas == n, err
		})
		if err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		b.ReportMetric(elapsed.Seconds(), "s/100-ready")
		b.ReportMetric(float64(n)/elapsed.Seconds(), "pods/s")
		b.StopTimer()
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	}
}
