package workload

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// unlimitedClient returns a copy of cfg without client-side rate limits,
// and its clientset: a workload measures the server, not client-go's
// limiter.
func unlimitedClient(cfg *rest.Config) (*rest.Config, *kubernetes.Clientset, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("workload: client: %w", err)
	}
	return cfg, client, nil
}

// createNamespace creates the workload's namespace: name, or a name
// generated from prefix when name is empty.
func createNamespace(ctx context.Context, client kubernetes.Interface, name, prefix string) (*v1.Namespace, error) {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if name == "" {
		ns.GenerateName = prefix
	}
	ns, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("workload: create namespace %s%s: %w", name, prefix, err)
	}
	return ns, nil
}
