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
	if err := whileProgressing(func(ctx context.Context) (int, bool, error) {
		n, err := pods(ctx)
		return n, n == sets, err
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
	if err := whileProgressing(func(ctx context.Context) (int, bool, error) {
		n, err := pods(ctx)
		if err != nil || n > 0 {
			return n, false, err
		}
		l, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, false, err
		}
		return len(l.Items), len(l.Items) == 0, nil
	}); err != nil {
		n, _ := pods(context.Background())
		t.Fatalf("%d pods left %v after the ReplicaSets' delete: %v", n, time.Since(deleted), err)
	}
	t.Logf("%d ReplicaSets with their pods in %v; every pod collected %v after the delete", sets, ready, time.Since(deleted))
}

// whileProgressing polls count until it reports done, and fails only when
// the count has not moved for stall (or after an hour's hard bound). The
// property checked is that every pod is created and then collected, not
// how fast: on a machine shared with other work the same thousand writes
// take from seconds to minutes, and a fixed deadline would test the
// machine's load. A controller that stops making progress still fails.
func whileProgressing(count func(ctx context.Context) (n int, done bool, err error)) error {
	const stall = 30 * time.Second
	last, moved := -1, time.Now()
	var lastErr error
	return wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Hour, true, func(ctx context.Context) (bool, error) {
		callCtx, cancel := context.WithTimeout(ctx, stall)
		defer cancel()
		n, done, err := count(callCtx)
		switch {
		case err != nil:
			lastErr = err
		case done:
			return true, nil
		case n != last:
			last, moved = n, time.Now()
		}
		if time.Since(moved) > stall {
			return false, fmt.Errorf("no progress for %v at %d (last error: %v)", stall, last, lastErr)
		}
		return false, nil
	})
}
