package daemonset_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// BenchmarkDaemonSetRolloutOver100Nodes registers 100 Node objects (no
// agents), runs the DaemonSet controller and the scheduler, and plays the
// nodes (every bound pod Running and Ready, deleted ones gone). It reports the seconds until
// the DaemonSet is available on all 100 nodes, and then the seconds of a
// rolling update of its template with maxUnavailable 10%.
func BenchmarkDaemonSetRolloutOver100Nodes(b *testing.B) {
	const n = 100
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cs, ns := start(b)
		for j := range n {
			createNode(b, cs, fmt.Sprintf("%s-%03d", ns, j), ns)
		}
		stop := playNodes(cs, ns)
		available := func(gen int64) error {
			return wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
				ds, err := cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
				return err == nil && ds.Status.ObservedGeneration == gen && ds.Status.NumberAvailable == n && ds.Status.UpdatedNumberScheduled == n, err
			})
		}
		ds := newDaemonSet("agent", ns)
		ds.Spec.UpdateStrategy.RollingUpdate = nil
		b.StartTimer()
		begin := time.Now()
		if _, err := cs.AppsV1().DaemonSets(ns).Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := available(1); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(begin).Seconds(), "s/create-100")
		got, err := cs.AppsV1().DaemonSets(ns).Get(context.Background(), "agent", metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		got.Spec.Template.Spec.Containers[0].Image = "busybox:2"
		got.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("10%"))
		begin = time.Now()
		if _, err := cs.AppsV1().DaemonSets(ns).Update(context.Background(), got, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		if err := available(2); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(begin).Seconds(), "s/rollout-100")
		b.StopTimer()
		stop()
	}
}
