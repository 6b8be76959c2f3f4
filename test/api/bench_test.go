package api_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
)

// BenchmarkStartToReady measures kite.Start on an empty data directory
// until a client's first request is answered, and Close. Each step of
// Start is reported too (its mean, "<step>-ms"), so that a profile can be
// read against where the time goes (docs/startup.md).
func BenchmarkStartToReady(b *testing.B) {
	steps := map[string]time.Duration{}
	var order []string
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
		for _, st := range srv.StartTrace() {
			if _, ok := steps[st.Name]; !ok {
				order = append(order, st.Name)
			}
			steps[st.Name] += st.Duration
		}
		srv.Close()
		b.StartTimer()
	}
	for _, name := range order {
		b.ReportMetric(float64(steps[name])/float64(time.Millisecond)/float64(b.N), name+"-ms")
	}
}
