// Package flowcontrol is API priority and fairness as kube-apiserver 1.37
// does it (k8s.io/apiserver/pkg/util/flowcontrol and
// pkg/server/filters/priority-and-fairness.go), written for Kite: every
// request is classified by the FlowSchemas into a
// PriorityLevelConfiguration, whose seats (a share of
// --max-requests-inflight + --max-mutating-requests-inflight) bound how many
// of its requests run at once; the others wait in queues chosen by shuffle
// sharding and leave them in fair-queuing order, or are rejected with 429.
//
// The decisions are pure functions with table tests: matching (match.go),
// the configuration digested from the objects and the seat split
// (config.go), the hand of queues of a flow and the queue chosen
// (shuffle.go), the bootstrap objects' upkeep (producer.go's decide
// functions), the Retry-After of rejected requests (retryafter.go). The
// runners around them are thin: Controller (controller.go) follows the
// objects and writes the FlowSchemas' Dangling condition, dispatch.go holds
// the seats and the queues, Wrap (filter.go) is the one HTTP filter, and
// Producer keeps the mandatory and suggested objects. docs/flowcontrol.md is
// the account.
package flowcontrol
