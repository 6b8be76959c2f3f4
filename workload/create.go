package workload

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CreatePods creates opts.Pods pods in opts.Namespace from opts.Writers
// concurrent clients. Rate is creates/s; the percentiles are per create.
func CreatePods(ctx context.Context, client kubernetes.Interface, opts Options) (Result, error) {
	opts, err := opts.ready()
	if err != nil {
		return Result{}, err
	}
	pods := client.CoreV1().Pods(opts.Namespace)
	lat, elapsed, err := parallel(ctx, opts.Pods, opts.Writers, func(ctx context.Context, i int) error {
		if _, err := pods.Create(ctx, opts.newPod(i), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %d: %w", i, err)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	r := Result{
		Name:     fmt.Sprintf("create pods (%d writers)", opts.Writers),
		Ops:      opts.Pods,
		Items:    opts.Pods,
		Duration: elapsed,
		Rate:     rate(opts.Pods, elapsed),
	}
	lat.fill(&r)
	return r, nil
}

// DeletePods deletes every pod of opts.Namespace with one deletecollection
// and grace period 0, so that pods bound to nodes go at once instead of
// waiting for a kubelet.
func DeletePods(ctx context.Context, client kubernetes.Interface, opts Options) (Result, error) {
	opts, err := opts.ready()
	if err != nil {
		return Result{}, err
	}
	lat, elapsed, err := parallel(ctx, 1, 1, func(ctx context.Context, _ int) error {
		err := client.CoreV1().Pods(opts.Namespace).DeleteCollection(ctx,
			metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("delete pods: %w", err)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	r := Result{Name: "delete all pods (deletecollection)", Ops: 1, Items: opts.Pods, Duration: elapsed, Rate: rate(opts.Pods, elapsed), Note: "rate is pods/s"}
	lat.fill(&r)
	return r, nil
}
