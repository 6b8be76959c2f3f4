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
	benchmarkStart(b, b.TempDir)
}

// BenchmarkRestartToReady is BenchmarkStartToReady on a data directory a
// server used before (and closed): what every start but the first costs,
// the bootstrap objects already in place.
func BenchmarkRestartToReady(b *testing.B) {
	dir := b.TempDir()
	srv, err := kite.Start(context.Background(), startOptions(dir))
	if err != nil {
		b.Fatal(err)
	}
	srv.Close()
	benchmarkStart(b, func() string { return dir })
}

func startOptions(dataDir string) kite.Options {
	return kite.Options{DataDir: dataDir, EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"}
}

// benchmarkStart starts a server in dataDir() per iteration, makes a
// first request and closes it, and reports each step's mean.
func benchmarkStart(b *testing.B, dataDir func() string) {
	steps := map[string]time.Duration{}
	var order []string
	for b.Loop() {
		srv, err := kite.Start(context.Background(), startOptions(dataDir()))
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
