package agent

import (
	"context"

	"github.com/go-logr/logr"

	"github.com/kite-project/kite/agent/kubetypes"
)

// LogSyncLoop is the SyncLoop of an agent that runs no pods: it drops
// each operation, which the agent has logged (logOperation) as it does for
// every consumer.
type LogSyncLoop struct{}

// Run drains updates until it is closed.
func (LogSyncLoop) Run(_ context.Context, updates <-chan kubetypes.PodUpdate, _ SourcesSeen) {
	for range updates {
	}
}

// logOperation logs u in one line with its pods' full names
// (name_namespace, as the kubelet names them), as the kubelet's sync loop
// logs "SyncLoop ADD" and the like.
func logOperation(log logr.Logger, u kubetypes.PodUpdate) {
	names := make([]string, len(u.Pods))
	for i, p := range u.Pods {
		names[i] = kubetypes.PodFullName(p)
	}
	log.Info("Pod operation", "op", u.Op.String(), "source", u.Source, "pods", names)
}
