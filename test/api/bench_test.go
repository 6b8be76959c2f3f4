package api_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
)

// BenchmarkStartToReady measures kite.Start on an empty data directory
// until a client's first request is answered, and Close.
func BenchmarkStartToReady(b *testing.B) {
	for b.Loop() {
		srv, err := kite.Start(context.Background(), kite.Options{DataDir: b.TempDir(), EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"})
		if err != nil {
			b.Fatal(err)
		}
		client := kubernetes.NewForConfigOrDie(srv.RESTConfig())
		if _, err := client.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		srv.Close()
		b.StartTimer()
	}
}
