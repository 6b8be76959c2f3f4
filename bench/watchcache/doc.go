// Package watchcache benchmarks Kite's watch cache (storage/watchcache over
// Kite's etcd store) against upstream's cacher
// (k8s.io/apiserver/pkg/storage/cacher over upstream's etcd3 store), side
// by side in one `go test -bench` run, on one embedded etcd with fsync off.
//
// The benchmarks are in the _test files; see ../README.md, section "Watch
// cache", for how to run them and the measured table. The package lives in
// the bench module, so that nothing in the Kite binary links upstream's
// cacher and the main module's `go test ./...` does not run these.
package watchcache
