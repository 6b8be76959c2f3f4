package builtin

import (
	"time"

	"github.com/kite-project/kite/registry"
)

// All returns the strategies of every resource Kite serves, in the order
// discovery lists them.
func All(now func() time.Time) []*registry.Strategy {
	if now == nil {
		now = time.Now
	}
	all := []*registry.Strategy{
		Pods(),
		Nodes(),
		Namespaces(now),
		ConfigMaps(),
		Secrets(),
		Services(),
		ServiceAccounts(),
		Events(),
		EventsV1(),
		Leases(),
		Deployments(),
		ReplicaSets(),
		ControllerRevisions(),
		Jobs(),
		CronJobs(),
		LocalSubjectAccessReviews(),
		SelfSubjectAccessReviews(),
		SelfSubjectRulesReviews(),
		SubjectAccessReviews(),
		SelfSubjectReviews(),
	}
	return append(all, rbacStrategies()...)
}
