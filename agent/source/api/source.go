// Package api is the agent's "api" pod source (--kubeconfig): the pods the
// API server has bound to this node.
//
// It lists and watches pods across all namespaces with
// fieldSelector=spec.nodeName=<node>, through listwatch's Reflector into an
// UndeltaStore, and sends the store's whole content as a SET after every
// change, as upstream's pkg/kubelet/config/apiserver.go does. The first
// list always sends, even when empty, so that the merge learns the source
// has reported.
//
// An API server that is down or restarting never empties the set: the
// Reflector keeps the store as it is while it cannot reach the server, and
// a re-list replaces the content in one step. When the server refuses
// connections (it is not listening), the Reflector tries again within
// RefusedMaxWait (0.8 s by default) instead of backing off exponentially,
// so the source is back within a second of the server's return.
//
// Mirror pods (the API server's copies of this node's static pods) carry
// spec.nodeName too and come in the same stream, as upstream; they are
// marked by the kubernetes.io/config.mirror annotation and the agent must
// not run them (see package mirror).
package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/listwatch"
)

// DefaultRefusedMaxWait bounds the wait after a refused connection. The
// agent must be back within a second of the API server's return: the wait
// is random in [0.4 s, 0.8 s), which leaves 200 ms for the watch request
// itself. A refused connection costs the server nothing.
const DefaultRefusedMaxWait = 800 * time.Millisecond

// Options configures an api source.
type Options struct {
	// Client is a REST client of the core/v1 API group, such as
	// kubernetes.NewForConfig(cfg).CoreV1().RESTClient(). Required.
	Client rest.Interface
	// NodeName is the node whose pods to watch. Required.
	NodeName string
	// RefusedMaxWait caps the wait after a refused connection (see
	// listwatch.Options.RefusedMaxWait); zero means DefaultRefusedMaxWait.
	RefusedMaxWait time.Duration
	// Backoff shapes the waits after other failures; zero fields are
	// listwatch's defaults (client-go's).
	Backoff listwatch.BackoffOptions
}

// Source watches the pods bound to one node.
type Source struct {
	opts Options
	lw   listwatch.ListerWatcher
}

// New checks opts and returns a source; Run starts it.
func New(opts Options) (*Source, error) {
	if opts.Client == nil {
		return nil, errors.New("api source: no REST client given")
	}
	if opts.NodeName == "" {
		return nil, errors.New("api source: no node name given")
	}
	if opts.RefusedMaxWait < 0 {
		return nil, fmt.Errorf("api source for node %q: negative RefusedMaxWait %v", opts.NodeName, opts.RefusedMaxWait)
	}
	if opts.RefusedMaxWait == 0 {
		opts.RefusedMaxWait = DefaultRefusedMaxWait
	}
	selector := fields.OneTermEqualSelector("spec.nodeName", opts.NodeName)
	return &Source{opts: opts, lw: listwatch.FromRESTClient(opts.Client, "pods", "", selector)}, nil
}

// Run lists and watches the node's pods and sends a SET to out after every
// change (and after every list, even an empty one), until ctx ends.
func (s *Source) Run(ctx context.Context, out chan<- kubetypes.PodUpdate) {
	logger := klog.FromContext(ctx).WithValues("source", kubetypes.APISource, "node", s.opts.NodeName)
	ctx = klog.NewContext(ctx, logger)
	store := listwatch.NewUndeltaStore(listwatch.UndeltaOptions[*v1.Pod]{
		// Push runs on the Reflector's goroutine with the store locked:
		// blocking here until the merge takes the snapshot holds the
		// Reflector back, so snapshots are never dropped or reordered.
		Push: func(pods []*v1.Pod) {
			select {
			case out <- kubetypes.PodUpdate{Op: kubetypes.SET, Source: kubetypes.APISource, Pods: pods}:
			case <-ctx.Done():
			}
		},
	})
	r, err := listwatch.NewReflector(listwatch.Options{
		Name:           "pods of node " + s.opts.NodeName,
		ListerWatcher:  s.lw,
		Store:          store,
		ExpectedType:   &v1.Pod{},
		Backoff:        s.opts.Backoff,
		RefusedMaxWait: s.opts.RefusedMaxWait,
	})
	if err != nil {
		// New built every required option; this is a programming error.
		logger.Error(err, "Cannot watch the API server's pods")
		return
	}
	logger.V(1).Info("Watching the API server's pods")
	r.Run(ctx)
}
