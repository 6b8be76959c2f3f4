// Package kite runs a Kite control plane in-process: embedded etcd (or an
// external cluster), the registry and the Kubernetes API over HTTPS, and
// hands back a *rest.Config for client-go.
//
// A test needs nothing else:
//
//	func TestSomething(t *testing.T) {
//		srv, err := kite.Start(t.Context(), kite.Options{DataDir: t.TempDir(), EtcdUnsafeNoFsync: true})
//		if err != nil {
//			t.Fatal(err)
//		}
//		defer srv.Close()
//		client := kubernetes.NewForConfigOrDie(srv.RESTConfig())
//		_, err = client.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
//		...
//	}
//
// The kite command's "server" and "apiserver" subcommands fill Options
// from their flags and call Start.
package kite
