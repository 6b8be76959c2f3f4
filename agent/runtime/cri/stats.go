package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kite-project/kite/agent/runtime"
)

var _ runtime.Stats = (*Runtime)(nil)

// ListContainerStats asks the runtime, as the kubelet's CRI stats
// provider does.
func (r *Runtime) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	resp, err := r.rs.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("cri: list container stats: %w", err)
	}
	return resp.GetStats(), nil
}
