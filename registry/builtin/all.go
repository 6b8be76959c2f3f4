package builtin

import (
	"slices"
	"time"

	"github.com/kite-project/kite/registry"
)

// All returns the strategies of every resource Kite serves, in the order
// discovery lists them.
func All(now func() time.Time) []*registry.Strategy {
	if now == nil {
		now = time.Now
	}
	return slices.Concat([]*registry.Strategy{
		Pods(),
		Nodes(),
		Namespaces(now),
		ConfigMaps(),
		Secrets(),
		Services(),
	}, serviceNetStrategies(), []*registry.Strategy{
		ServiceAccounts(),
		Events(),
		ReplicationControllers(),
		PodTemplates(),
		EventsV1(),
		Leases(),
		Deployments(),
		ReplicaSets(),
		ControllerRevisions(),
		Jobs(),
		CronJobs(),
		PodDisruptionBudgets(),
	}, admissionRegistrationStrategies(), []*registry.Strategy{
		LocalSubjectAccessReviews(),
		SelfSubjectAccessReviews(),
		SelfSubjectRulesReviews(),
		SubjectAccessReviews(),
		SelfSubjectReviews(),
	}, workloadStorageStrategies(now), coverageStrategies(), rbacStrategies())
}
