package workload

import (
	"context"
	"errors"

	"k8s.io/client-go/rest"
)

// SetUpComparison installs the BenchPod CRD and creates n pods and n
// BenchPods in namespace, which must exist, as RunCustomResources does, for
// tests of what the server does with them. remove deletes the BenchPods
// and the CRD.
func SetUpComparison(ctx context.Context, cfg *rest.Config, namespace string, n int) (remove func(context.Context) error, err error) {
	client, crClient, err := comparisonClients(cfg)
	if err != nil {
		return nil, err
	}
	opts, err := Options{Namespace: namespace, Pods: n, Nodes: 10, Updates: 1}.ready()
	if err != nil {
		return nil, err
	}
	remove = func(ctx context.Context) error {
		_, err := deleteCustomResources(ctx, client, opts)
		return err
	}
	installed, err := installBenchPodCRD(ctx, client, crClient, namespace)
	if err != nil {
		if installed {
			err = errors.Join(err, remove(ctx))
		}
		return nil, err
	}
	for _, o := range []objects{
		{what: "pods", rest: client.CoreV1().RESTClient(), resource: "pods", body: opts.podJSONBody},
		{what: "custom resources", rest: crClient, resource: benchPods.Resource, body: opts.benchPodJSON},
	} {
		if _, _, err := createObjects(ctx, o, opts, 0, n); err != nil {
			return nil, errors.Join(err, remove(ctx))
		}
	}
	return remove, nil
}
