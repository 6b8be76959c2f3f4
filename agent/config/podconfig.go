package config

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/kubetypes"
)

// UpdatesBuffer is the capacity of the channel of operations, as upstream.
const UpdatesBuffer = 50

// Options configures a PodConfig.
type Options struct {
	// Sources are the configured sources (kubetypes.FileSource, HTTPSource,
	// APISource): only these are accepted, and SeenAllSources waits for
	// them. A source that is not configured is never waited for.
	Sources []string
	// Reporter, if set, receives the problems the merge finds (duplicate
	// pods), besides the log line.
	Reporter kubetypes.ProblemReporter
	// Now is the clock for first-seen times; nil means time.Now.
	Now func() time.Time
}

// PodConfig runs Merge: one goroutine (Run) owns the State, reads the
// sources' snapshots from Input and sends the resulting operations on
// Updates. A consumer that stops reading Updates holds back every source,
// as upstream: operations are never dropped.
type PodConfig struct {
	opts    Options
	in      chan kubetypes.PodUpdate
	updates chan kubetypes.PodUpdate

	// mu guards state, which Run replaces after each merge and the
	// Seen methods read. It is never held while sending.
	mu    sync.RWMutex
	state State
}

// New returns a PodConfig for the given sources. Run must be called for it
// to do anything.
func New(opts Options) (*PodConfig, error) {
	seen := map[string]bool{}
	for _, s := range opts.Sources {
		switch s {
		case kubetypes.FileSource, kubetypes.HTTPSource, kubetypes.APISource:
		default:
			return nil, fmt.Errorf("pod config: unknown pod source %q", s)
		}
		if seen[s] {
			return nil, fmt.Errorf("pod config: source %q given twice", s)
		}
		seen[s] = true
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &PodConfig{
		opts:    opts,
		in:      make(chan kubetypes.PodUpdate),
		updates: make(chan kubetypes.PodUpdate, UpdatesBuffer),
	}, nil
}

// Input is where sources send their updates (normally SETs). A sender must
// also select on its own context: once Run has returned, nobody reads.
func (c *PodConfig) Input() chan<- kubetypes.PodUpdate { return c.in }

// Updates is the stream of operations for the sync loop. It is closed when
// Run returns.
func (c *PodConfig) Updates() <-chan kubetypes.PodUpdate { return c.updates }

// Seen says whether source has sent its first snapshot.
func (c *PodConfig) Seen(source string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.state.Seen(source)
}

// SeenAllSources says whether every configured source has sent its first
// snapshot. Prefer Seen(pod's source) where a decision concerns one pod.
func (c *PodConfig) SeenAllSources() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.state.SeenAll(c.opts.Sources...)
}

// Run merges updates until ctx ends, then closes Updates.
func (c *PodConfig) Run(ctx context.Context) {
	defer close(c.updates)
	logger := klog.FromContext(ctx).WithName("podconfig")
	configured := map[string]bool{}
	for _, s := range c.opts.Sources {
		configured[s] = true
	}
	for {
		var u kubetypes.PodUpdate
		select {
		case <-ctx.Done():
			return
		case u = <-c.in:
		}
		if !configured[u.Source] {
			c.report(logger, kubetypes.Problem{Source: u.Source, Reason: kubetypes.ReasonFailedValidation,
				Err: fmt.Errorf("update %s from a source that is not configured, ignored", u.Op)})
			continue
		}
		c.mu.RLock()
		prev := c.state
		c.mu.RUnlock()
		next, res := Merge(prev, u, c.opts.Now())
		c.mu.Lock()
		c.state = next
		c.mu.Unlock()
		for _, p := range res.Problems {
			c.report(logger, p)
		}
		logReplacements(logger, res.Updates)
		for _, op := range res.Updates {
			logger.V(2).Info("Pod update", "op", op.Op.String(), "source", op.Source, "pods", len(op.Pods))
			select {
			case <-ctx.Done():
				return
			case c.updates <- op:
			}
		}
	}
}

func (c *PodConfig) report(logger klog.Logger, p kubetypes.Problem) {
	logger.Info("Pod source problem", "source", p.Source, "reason", p.Reason, "where", p.Where, "err", p.Err)
	if c.opts.Reporter != nil {
		c.opts.Reporter.ReportProblem(p)
	}
}

// logReplacements logs the pods that one update replaces by a new UID
// under the same full name, as an edited static pod manifest does: users
// asked why their pod restarted (kubernetes/kubernetes#52939).
func logReplacements(logger klog.Logger, updates []kubetypes.PodUpdate) {
	removed := map[string]string{} // full name → UID
	for _, u := range updates {
		switch u.Op {
		case kubetypes.REMOVE:
			for _, pod := range u.Pods {
				removed[kubetypes.PodFullName(pod)] = string(pod.UID)
			}
		case kubetypes.ADD:
			for _, pod := range u.Pods {
				if old, ok := removed[kubetypes.PodFullName(pod)]; ok {
					logger.Info("Replacing pod: its source changed it", "pod", klog.KObj(pod), "source", u.Source, "oldUID", old, "newUID", pod.UID)
				}
			}
		}
	}
}
