package builtin

import (
	"slices"
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
	return slices.Concat([]*registry.Strategy{
		Pods(),
		Nodes(),
		Namespaces(now),
		ConfigMaps(),
		Secrets(),
		Services(),
	}, serviceNetStrategies(), []*registry.Strategy{
		withTokenRequest(ServiceAccounts(), o.auth.Tokens),
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
		HorizontalPodAutoscalers(),
		HorizontalPodAutoscalersV1(),
	}, admissionRegistrationStrategies(), []*registry.Strategy{
		LocalSubjectAccessReviews(),
		SelfSubjectAccessReviews(),
		SelfSubjectRulesReviews(),
		SubjectAccessReviews(),
		SelfSubjectReviews(),
		TokenReviews(o.auth.Reviewer),
	}, workloadStorageStrategies(now), coverageStrategies(), rbacStrategies(),
		[]*registry.Strategy{Bindings(), ComponentStatuses(o.components)})
}
