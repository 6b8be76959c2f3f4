package garbagecollector_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/replicaset"
)

// TestThousandReplicaSetsDeletedAtOnceLeaveNoPods: 1 000 ReplicaSets,
// each with the pod its controller made, deleted at once by one
// DeleteCollection in the background: the collector deletes every pod.
func TestThousandReplicaSetsDeletedAtOnceLeaveNoPods(t *testing.T) {
	cs, gc := start(t)
	ns := namespace(t, cs)
	rc, err := replicaset.New(replicaset.Options{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Go(func() { rc.Run(ctx) })
	// Stopped before the collector (cleanups run last first).
	t.Cleanup(func() { cancel(); running.Wait() })

	const sets = 1000
	began := time.Now()
	err = inParallel(sets, func(i int) error {
		name := fmt.Sprintf("rs-%d", i)
		_, err := cs.AppsV1().ReplicaSets(ns).Create(context.Background(), &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"set": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"set": name}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
				},
			},
		}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	pods := func(ctx context.Context) (int, error) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := pods(ctx)
		return n == sets, err
	}); err != nil {
		n, _ := pods(context.Background())
		t.Fatalf("%d pods of %d ReplicaSets: %v", n, sets, err)
	}
	if err := rc.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := gc.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	ready := time.Since(began)
	deleted := time.Now()
	bg := metav1.DeletePropagationBackground
	if err := cs.AppsV1().ReplicaSets(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{PropagationPolicy: &bg}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := pods(ctx)
		if err != nil || n > 0 {
			return false, err
		}
		l, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, err
	}); err != nil {
		n, _ := pods(context.Background())
		t.Fatalf("%d pods left %v after the ReplicaSets' delete: %v", n, time.Since(deleted), err)
	}
	t.Logf("%d ReplicaSets with their pods in %v; every pod collected %v after the delete", sets, ready, time.Since(deleted))
}
