// Command refserver is the reference kite bench measures Kite against:
// kube-apiserver's own machinery for core/v1 pods and namespaces (the
// k8s.io/apiserver generic server, the generic registry Store, the cacher
// and the etcd3 store) and for CustomResourceDefinitions and custom
// resources (k8s.io/apiextensions-apiserver, as kube-apiserver's delegate),
// over the same embedded etcd Kite uses, in one process. It serves HTTPS on 127.0.0.1 (self-signed), authenticates an
// admin bearer token as Kite does, authorizes everything (AlwaysAllow),
// writes a kubeconfig with the token to <data-dir>/kubeconfig, prints
// "ready", and runs until SIGINT or SIGTERM:
//
//	(cd bench/refserver && go build -o /tmp/refserver .)
//	/tmp/refserver --data-dir /tmp/ref &
//	kite bench --kubeconfig /tmp/ref/kubeconfig
//
// What it leaves out of kube-apiserver, each of which would only make
// upstream slower: admission, validation and defaulting (they live in
// k8s.io/kubernetes), conversion to an internal version (the v1 types are
// registered as internal), RBAC, priority and fairness, audit.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	var opts options
	flag.StringVar(&opts.dataDir, "data-dir", "", "directory for etcd's data, the serving certificate and the kubeconfig (required)")
	flag.IntVar(&opts.port, "secure-port", 0, "HTTPS port on 127.0.0.1; 0 picks a free one")
	flag.BoolVar(&opts.unsafeNoFsync, "unsafe-no-fsync", false, "do not fsync etcd's writes (as Kite's --unsafe-no-fsync)")
	flag.Parse()
	if opts.dataDir == "" {
		fmt.Fprintln(os.Stderr, "refserver: --data-dir is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "refserver:", err)
		os.Exit(1)
	}
}
