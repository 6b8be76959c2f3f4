// Package resourceset builds and owns the storage stacks of the resources
// the API server serves: for each resource, from its registry Strategy,
// the etcd store (timed by storage/etcd.Instrument when metrics are on),
// the watch cache (or an embedder's wrapper) and the registry Store
// (Builder.Build, the one place a stack is made); and the Set of served
// stacks, which changes while the server serves (custom resources come
// and go: package crdserving) and hands the API server and the OpenAPI
// service each change (docs/crds.md).
//
// New builds the built-in resources' stacks; Describe is the one OpenAPI
// description of a Strategy, for built-in and custom resources alike.
package resourceset
