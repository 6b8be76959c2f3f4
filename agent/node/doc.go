// Package node keeps the agent's Node alive in the API as the kubelet does
// (kubelet_node_status.go, nodestatus/setters.go, component-helpers'
// lease controller): it registers the Node, patches its status when it
// changes and at least every ReportFrequency, and renews its Lease in
// kube-node-lease every RenewInterval — the Lease is the heartbeat that
// node lifecycle watches.
//
// The status itself is computed by Build, a pure function of what the
// host reports (Info) and the previous status, so that the rules for
// conditions and their transition times have table tests. Manager is the
// runner that owns the goroutine and the API calls. See docs/agent.md.
package node
