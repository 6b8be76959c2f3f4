package workload

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// ListAll lists every pod of opts.Namespace opts.Repeats times at the
// given resourceVersion: "0" may be answered from the server's cache, ""
// must be consistent (as recent as etcd). Each list must return every pod.
func ListAll(ctx context.Context, client kubernetes.Interface, opts Options, resourceVersion string) (Result, error) {
	opts, err := opts.ready()
	if err != nil {
		return Result{}, err
	}
	name := "list all, consistent (RV=\"\")"
	if resourceVersion != "" {
		name = fmt.Sprintf("list all from cache (RV=%s)", resourceVersion)
	}
	pods := newPodLister(client, opts.Decode)
	if resourceVersion == "0" {
		if err := catchUp(ctx, client, opts.Namespace); err != nil {
			return Result{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	lat, elapsed, err := parallel(ctx, opts.Repeats, 1, func(ctx context.Context, _ int) error {
		list, err := pods.list(ctx, opts.Namespace, metav1.ListOptions{ResourceVersion: resourceVersion})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if len(list.names) != opts.Pods {
			return fmt.Errorf("%s: %d pods, want %d", name, len(list.names), opts.Pods)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	r := Result{Name: name, Ops: opts.Repeats, Items: opts.Pods, Duration: elapsed, Rate: rate(opts.Repeats, elapsed)}
	lat.fill(&r)
	return r, nil
}

// ListByNode lists the pods of each node, across all namespaces, with the
// field selector spec.nodeName=X that a kubelet uses, and checks each
// count. It lists from the cache (RV "0"), as a kubelet's informer does.
func ListByNode(ctx context.Context, client kubernetes.Interface, opts Options) (Result, error) {
	opts, err := opts.ready()
	if err != nil {
		return Result{}, err
	}
	pods := newPodLister(client, opts.Decode)
	if err := catchUp(ctx, client, opts.Namespace); err != nil {
		return Result{}, fmt.Errorf("list pods by node: %w", err)
	}
	lat, elapsed, err := parallel(ctx, opts.Nodes, 1, func(ctx context.Context, n int) error {
		node := opts.nodeName(n)
		list, err := pods.list(ctx, metav1.NamespaceAll, metav1.ListOptions{
			ResourceVersion: "0",
			FieldSelector:   fields.OneTermEqualSelector("spec.nodeName", node).String(),
		})
		if err != nil {
			return fmt.Errorf("list pods of %s: %w", node, err)
		}
		if want := opts.podsOnNode(n); len(list.names) != want {
			return fmt.Errorf("list pods of %s: %d pods, want %d", node, len(list.names), want)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	r := Result{
		Name: "list spec.nodeName=X (RV=0)", Ops: opts.Nodes, Items: opts.podsOnNode(0),
		Duration: elapsed, Rate: rate(opts.Nodes, elapsed),
		Note: fmt.Sprintf("one list per node, %d nodes", opts.Nodes),
	}
	lat.fill(&r)
	return r, nil
}

// Paginate lists every pod of opts.Namespace in pages of limit, following
// continue tokens, opts.Repeats times, and checks that each walk returns
// every pod exactly once. The percentiles are per page; Duration is all
// walks.
func Paginate(ctx context.Context, client kubernetes.Interface, opts Options, limit int64) (Result, error) {
	opts, err := opts.ready()
	if err != nil {
		return Result{}, err
	}
	pods := newPodLister(client, opts.Decode)
	var lat latencies
	start := time.Now()
	for range opts.Repeats {
		seen := make(map[string]bool, opts.Pods)
		lo := metav1.ListOptions{Limit: limit}
		for {
			t := time.Now()
			list, err := pods.list(ctx, opts.Namespace, lo)
			if err != nil {
				return Result{}, fmt.Errorf("paginate: %w", err)
			}
			lat = append(lat, time.Since(t))
			for _, name := range list.names {
				if seen[name] {
					return Result{}, fmt.Errorf("paginate: pod %s returned twice", name)
				}
				seen[name] = true
			}
			if lo.Continue = list.cont; lo.Continue == "" {
				break
			}
		}
		if len(seen) != opts.Pods {
			return Result{}, fmt.Errorf("paginate: %d pods, want %d", len(seen), opts.Pods)
		}
	}
	elapsed := time.Since(start)
	r := Result{
		Name: fmt.Sprintf("paginate, limit %d", limit), Ops: len(lat), Items: opts.Pods,
		Duration: elapsed, Rate: rate(len(lat), elapsed),
		Note: fmt.Sprintf("%d walks of %d pages", opts.Repeats, len(lat)/max(1, opts.Repeats)),
	}
	lat.fill(&r)
	return r, nil
}

// catchUp makes one untimed consistent list. A list at RV "0" may be
// answered from a cache that is still a few events behind the creates
// that preceded it (upstream's semantics too); a consistent read returns
// only once the server's cache has seen etcd's current revision, so the
// RV "0" lists timed after it see every pod.
func catchUp(ctx context.Context, client kubernetes.Interface, namespace string) error {
	if _, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("consistent list before timing: %w", err)
	}
	return nil
}
