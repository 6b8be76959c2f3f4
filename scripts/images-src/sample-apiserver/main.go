// Command sample-apiserver is k8s.io/sample-apiserver's server (the "wardle"
// group), built from the published module of our Kubernetes version, for
// the image e2e.test names registry.k8s.io/e2e-test-images/sample-apiserver
// (scripts/images --conformance). Its main is upstream's, line for line: the
// image exists to run upstream's extension API server behind Kite's
// aggregation layer, so nothing here is Kite's own.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
	"k8s.io/sample-apiserver/pkg/cmd/server"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	options := server.NewWardleServerOptions(os.Stdout, os.Stderr)
	cmd := server.NewCommandStartWardleServer(ctx, options, false)
	os.Exit(cli.Run(cmd))
}
