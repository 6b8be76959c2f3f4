package agent

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/kubetypes"
)

// LogSyncer is the Syncer of an agent that runs no pods: it logs each
// operation, one line with its pods' full names (name_namespace, as the
// kubelet names them), to the logger of Run's context.
type LogSyncer struct{}

// Run logs each operation until updates is closed.
func (LogSyncer) Run(ctx context.Context, updates <-chan kubetypes.PodUpdate, _ SourcesSeen) {
	log := klog.FromContext(ctx)
	for u := range updates {
		names := make([]string, len(u.Pods))
		for i, p := range u.Pods {
			names[i] = kubetypes.PodFullName(p)
		}
		log.Info("Pod operation", "op", u.Op.String(), "source", u.Source, "pods", names)
	}
}
