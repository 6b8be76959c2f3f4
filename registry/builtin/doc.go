// Package builtin holds the strategies of the resources Kite serves:
// core/v1 pods, nodes, namespaces, configmaps, secrets, services,
// serviceaccounts and events, events.k8s.io/v1 events and
// coordination.k8s.io/v1 leases, each with upstream's rules for what
// create and update may change, selectable fields and deletion.
//
// Defaulting and validation here are the subset kubectl and client-go
// users meet first (names, containers, images, ports, restartPolicy, pod
// spec immutability); they are to be replaced by the apis/core packages.
package builtin
