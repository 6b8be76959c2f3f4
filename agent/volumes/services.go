package volumes

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/listwatch"
)

// services keeps every Service of the cluster, as the kubelet's service
// informer: containers' Service variables are built from it
// (containerconfig.ServiceEnv).
type services struct {
	store     *listwatch.Indexer[*v1.Service]
	reflector *listwatch.Reflector
	wait      time.Duration
}

// errServicesNotSynced is the kubelet's error for a pod from the API
// whose container would start before the Services were read once: its
// KUBERNETES_SERVICE_HOST would be missing.
var errServicesNotSynced = errors.New("services have not yet been read at least once, cannot construct envvars")

func newServices(c corev1client.ServicesGetter, wait time.Duration) (*services, error) {
	s := &services{store: listwatch.NewIndexer(listwatch.IndexerOptions[*v1.Service]{}), wait: wait}
	var err error
	s.reflector, err = listwatch.NewReflector(listwatch.Options{
		Name:           "services",
		ListerWatcher:  listwatch.FromTypedClient[*v1.ServiceList](c.Services(""), nil),
		Store:          s.store,
		ExpectedType:   &v1.Service{},
		RefusedMaxWait: time.Second,
	})
	return s, err
}

// of are the Services of pod's namespace and default's, once the first
// list is in (waited for at most s.wait); a static pod does not wait and
// takes what there is, as the kubelet's.
func (s *services) of(ctx context.Context, pod *v1.Pod) ([]*v1.Service, error) {
	if !s.reflector.HasSynced() && !kubetypes.IsStaticPod(pod) {
		t := time.NewTimer(s.wait)
		defer t.Stop()
		select {
		case <-s.reflector.Synced():
		case <-t.C:
			return nil, errServicesNotSynced
		case <-ctx.Done():
			return nil, errServicesNotSynced
		}
	}
	var out []*v1.Service
	for _, svc := range s.store.List() {
		if svc.Namespace == pod.Namespace || svc.Namespace == "default" {
			out = append(out, svc)
		}
	}
	return out, nil
}
