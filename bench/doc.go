// Package bench runs upstream's storage benchmarks against Kite's etcd store
// and against upstream's own etcd3 store, side by side in one `go test
// -bench` run. It is a separate module so that the Kite binary never links
// upstream's store: only this module imports k8s.io/apiserver/pkg/storage/etcd3.
package bench
