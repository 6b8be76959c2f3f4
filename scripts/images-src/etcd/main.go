// Command etcd is etcd's server (go.etcd.io/etcd/server/v3/etcdmain), at the
// version Kite embeds, for the image e2e.test names registry.k8s.io/etcd
// (scripts/images --conformance): the sample API server of the Aggregator
// conformance test keeps its objects in it. As etcd's own main, it only
// hands the arguments to etcdmain.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
