package agent

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/kubetypes"
)

// LogSyncer is the Syncer of an agent that runs no pods: it logs each
// operation (logOperation) to the logger of Run's context.
type LogSyncer struct{}

// Run logs each operation until updates is closed.
func (LogSyncer) Run(ctx context.Context, updates <-chan kubetypes.PodUpdate, _ SourcesSeen) {
	log := klog.FromContext(ctx)
	for u := range updates {
		logOperation(log, u)
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
