package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
)

var _ runtime.ResourceUpdater = (*Runtime)(nil)

// UpdateContainerResources sets the cgroup limits of a running container,
// as the kubelet's in-place resize does through the CRI.
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, resources *runtimeapi.LinuxContainerResources) error {
	_, err := r.rs.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: resources})
	return wrap(err, "UpdateContainerResources", id)
}
