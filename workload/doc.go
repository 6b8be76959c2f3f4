// Package workload holds the standard workloads of `kite bench`: each runs
// against any API server through client-go, measures what a client sees
// (throughput, latency percentiles, lost watch events, server memory) and
// returns a Result. Run runs them all in order in a namespace of its own and
// deletes it afterwards; WriteTable and WriteJSON print a Report.
//
// The workloads are the ones Kite is held to against kube-apiserver: create
// N pods with C writers; list all from cache (RV "0") and consistent
// (RV ""); list by spec.nodeName; paginate with limit 500; fan one write out
// to W watchers (all namespaces, and one node each) and check that every
// watcher saw every expected event exactly once, in resourceVersion order;
// sync a client-go informer over the N pods.
//
// Figures measured on one machine include the client's own work, which
// competes with the server for the same cores; compare runs on the same
// machine only. Lists and the fan-out's watchers keep theirs small: by
// default (RawDecode) they read list bodies and watch frames and decode only
// what the checks need (the items' names and the continue token; an
// event's type and the pod's namespace, resourceVersion and sent
// annotation), where client-go (ClientGoDecode) decodes every pod in full.
package workload
