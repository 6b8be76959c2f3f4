// Package storage runs persistent volumes end to end: one Kite with the
// scheduler, the PV binder, the local-path provisioner and the
// protection controllers, and one real agent (the process runtime) on a
// node of its own, which mounts the claims' volumes (docs/storage.md).
package storage

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/agent"
	"github.com/kite-project/kite/agent/node"
	"github.com/kite-project/kite/controllers"
)

var (
	shared *kite.Server
	cs     kubernetes.Interface
	// nodeName is the agent's node; rootDir its --root-dir.
	nodeName, rootDir string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	srv, err := kite.Start(context.Background(), kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", Controllers: []string{
		controllers.Namespace, controllers.ServiceAccount, controllers.RootCACertPublisher, controllers.Scheduler, controllers.StatefulSet,
		controllers.PersistentVolumeBinder, controllers.LocalPathProvisioner, controllers.PVCProtection, controllers.PVProtection,
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start kite:", err)
		return 1
	}
	shared = srv
	defer func() {
		if err := srv.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close kite:", err)
		}
	}()
	cs = kubernetes.NewForConfigOrDie(srv.RESTConfig())
	dir, err := os.MkdirTemp("", "kite-storage-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	nodeName, rootDir = "storage-node", dir
	a, err := agent.New(agent.Options{
		NodeName: nodeName, RESTConfig: srv.RESTConfig(), RootDir: rootDir, ServerAddress: "127.0.0.1",
		// The disk signals off, as kind's nodes run: the node's pods must
		// not depend on how full the test machine's disk is.
		Node: node.Options{NodeIP: net.ParseIP("127.0.0.1"), UpdateInterval: 500 * time.Millisecond, EvictionHard: node.Thresholds{}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background()))
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	return m.Run()
}
