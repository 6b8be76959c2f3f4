package daemonset_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// BenchmarkDaemonSetRolloutOver100Nodes registers 100 Node objects (no
// agents), runs the DaemonSet controller and the scheduler, and plays the
// nodes (every bound pod Running and Ready). It reports the seconds until
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
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() {
			for ctx.Err() == nil {
				if l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
					for _, p := range l.Items {
						if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodRunning {
							p.Status.Phase = corev1.PodRunning
							p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
							_, _ = cs.CoreV1().Pods(ns).UpdateStatus(ctx, &p, metav1.UpdateOptions{})
						}
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
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
		wg.Wait()
	}
}
