package runtime

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Stats is a runtime that measures its containers, as the CRI's
// ListContainerStats: the CPU time used since each container started
// (usageCoreNanoSeconds) and its memory working set, each stamped with
// when it was read. Both runtimes have it; the agent's summary (the
// kubelet's /stats/summary) and from it the metrics API read it.
type Stats interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}
