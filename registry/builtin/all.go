package builtin

import (
	"time"

	"github.com/kite-project/kite/registry"
)

// All returns the strategies of every resource Kite serves, in the order
// discovery lists them.
func All(now func() time.Time, opts ...Option) []*registry.Strategy {
	if now == nil {
		now = time.Now
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return []*registry.Strategy{
		Pods(),
		Nodes(),
		Namespaces(now),
		ConfigMaps(),
		Secrets(),
		Services(),
		withTokenRequest(ServiceAccounts(), o.auth.Tokens),
		Events(),
		EventsV1(),
		Leases(),
		Deployments(),
		ReplicaSets(),
		ControllerRevisions(),
		Jobs(),
		CronJobs(),
		SelfSubjectAccessReviews(),
		SelfSubjectRulesReviews(),
		SelfSubjectReviews(),
		TokenReviews(o.auth.Reviewer),
	}
}
