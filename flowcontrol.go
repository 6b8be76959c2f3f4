package kite

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/apiserver"
	"github.com/kite-project/kite/apiserver/flowcontrol"
	"github.com/kite-project/kite/resourceset"
)

// newFlowControl builds API priority and fairness (docs/flowcontrol.md)
// over the served FlowSchemas and PriorityLevelConfigurations, unless
// opts.DisablePriorityAndFairness or no seats (both in-flight limits
// off) leave the max-in-flight limits in charge, and starts following
// them. Its seats are MaxRequestsInFlight + MaxMutatingRequestsInFlight,
// as upstream's.
func (s *Server) newFlowControl(opts Options) (err error) {
	if opts.DisablePriorityAndFairness {
		return nil
	}
	seats := func(n, def int) int {
		switch {
		case n == 0:
			return def
		case n < 0:
			return 0
		}
		return n
	}
	total := seats(opts.MaxRequestsInFlight, apiserver.DefaultMaxRequestsInFlight) +
		seats(opts.MaxMutatingRequestsInFlight, apiserver.DefaultMaxMutatingRequestsInFlight)
	if total <= 0 {
		return nil
	}
	s.apf, err = flowcontrol.New(flowcontrol.Options{
		ServerConcurrencyLimit: total,
		FlowSchemas:            resourceset.StoreListerWatcher(s.resources.Store("flowschemas.flowcontrol.apiserver.k8s.io")),
		PriorityLevels:         resourceset.StoreListerWatcher(s.resources.Store("prioritylevelconfigurations.flowcontrol.apiserver.k8s.io")),
		ObjectCount:            s.objectCount,
		Registerer:             s.metrics.Registry(),
	})
	if err != nil {
		return err
	}
	s.wg.Go(func() { s.apf.Run(s.runCtx) })
	return nil
}

// flowControlFilter is the filter apiserver.Options.FlowControl takes: nil
// (not a nil *Controller) when priority and fairness is off.
func (s *Server) flowControlFilter() interface {
	Wrap(http.Handler) http.Handler
} {
	if s.apf == nil {
		return nil
	}
	return s.apf
}

// startFlowControl runs, once the API serves, the writer of the
// FlowSchemas' Dangling conditions and the producer that keeps the
// mandatory and suggested objects (kube-apiserver's
// priority-and-fairness-config-producer), both as the admin.
func (s *Server) startFlowControl() error {
	if s.apf == nil {
		s.hooks.apf.finish() // no producer runs
		return nil
	}
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		return err
	}
	s.wg.Go(func() { s.apf.RunStatus(s.runCtx, cs.FlowcontrolV1()) })
	p := &flowcontrol.Producer{Client: cs.FlowcontrolV1(), Ensured: s.hooks.apf.finish}
	s.wg.Go(func() { p.Run(s.runCtx) })
	return nil
}

// objectCount counts a resource's objects for APF's work estimator, from
// its watch cache: -1 (as many as can be) while the cache fills, not
// counted when the resource has no cache of its own.
func (s *Server) objectCount(group, resource string) (int64, bool) {
	st := s.resources.Store(schema.GroupResource{Group: group, Resource: resource}.String())
	if st == nil {
		return 0, false
	}
	c, ok := st.Storage().(interface{ ObjectCount() (int64, bool) })
	if !ok {
		return 0, false
	}
	if n, ready := c.ObjectCount(); ready {
		return n, true
	}
	return -1, true
}
