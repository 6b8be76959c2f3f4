package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/agent/config"
	"github.com/kite-project/kite/agent/kubetypes"
)

// runAgentConfig runs a file source into a real PodConfig, as the agent
// will, and returns the stream of operations.
func runAgentConfig(t testing.TB, opts Options) (<-chan kubetypes.PodUpdate, *recorder) {
	t.Helper()
	rec := &recorder{}
	opts.Reporter = rec
	opts.NodeName = nodeName
	src, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	pc, err := config.New(config.Options{Sources: []string{kubetypes.FileSource}, Reporter: rec})
	if err != nil {
		t.Fatalf("config.New: %v", err)
	}
	_, logCtx := ktesting.NewTestContext(t) // logs go to the test's output
	ctx, cancel := context.WithCancel(logCtx)
	done := make(chan struct{}, 2)
	go func() { pc.Run(ctx); done <- struct{}{} }()
	go func() { src.Run(ctx, pc.Input()); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
	})
	return pc.Updates(), rec
}

// nextOp returns the next operation as "OP name:image,...".
func nextOp(t testing.TB, ops <-chan kubetypes.PodUpdate) string {
	t.Helper()
	select {
	case u := <-ops:
		return u.Op.String() + " " + names(u.Pods)
	case <-time.After(waitTimeout):
		t.Fatal("no operation")
	}
	return ""
}

// TestEndToEndManifestLifecycle: real files, inotify, the real merge. The
// rescan period is an hour, so every reaction comes from inotify.
func TestEndToEndManifestLifecycle(t *testing.T) {
	dir := t.TempDir()
	ops, rec := runAgentConfig(t, Options{Path: dir, CheckFrequency: time.Hour, SettlePeriod: 50 * time.Millisecond})
	if got := nextOp(t, ops); got != "ADD " {
		t.Fatalf("first report: %q, want an empty ADD", got)
	}

	web := filepath.Join(dir, "web.yaml")
	start := time.Now()
	writeAtomic(t, web, manifestYAML("web", "v1"))
	if got := nextOp(t, ops); got != "ADD default/web-node1:v1" {
		t.Fatalf("manifest dropped in: %q", got)
	}
	t.Logf("manifest dropped in → ADD in %v (rescan period 1h)", time.Since(start))

	// An edit changes the content hash, so the pod is replaced.
	writeAtomic(t, web, manifestYAML("web", "v2"))
	if got := nextOp(t, ops); got != "REMOVE default/web-node1:v1" {
		t.Fatalf("edit: %q", got)
	}
	if got := nextOp(t, ops); got != "ADD default/web-node1:v2" {
		t.Fatalf("edit: %q", got)
	}

	// A manifest that sets its UID is updated in place.
	db := filepath.Join(dir, "db.yaml")
	withUID := func(image string) string {
		return strings.Replace(manifestYAML("db", image), "  name: db\n", "  name: db\n  uid: db-uid\n", 1)
	}
	writeAtomic(t, db, withUID("v1"))
	if got := nextOp(t, ops); got != "ADD default/db-node1:v1" {
		t.Fatalf("db added: %q", got)
	}
	writeAtomic(t, db, withUID("v2"))
	if got := nextOp(t, ops); got != "UPDATE default/db-node1:v2" {
		t.Fatalf("db edited: %q", got)
	}

	// A broken edit is reported and changes nothing.
	writeAtomic(t, web, "apiVersion: v1\nkind: Pod\nmetadata: {name: web\n")
	rec.waitProblem(t, kubetypes.ReasonFailedToParse, web)
	select {
	case u := <-ops:
		t.Fatalf("broken edit gave %s %s", u.Op, names(u.Pods))
	case <-time.After(100 * time.Millisecond):
	}
	// Fixed again with the same content as before: the same pod, nothing to do.
	writeAtomic(t, web, manifestYAML("web", "v2"))
	writeAtomic(t, db, withUID("v2"))
	select {
	case u := <-ops:
		t.Fatalf("restoring the last good content gave %s %s", u.Op, names(u.Pods))
	case <-time.After(100 * time.Millisecond):
	}

	if err := os.Remove(web); err != nil {
		t.Fatal(err)
	}
	if got := nextOp(t, ops); got != "REMOVE default/web-node1:v2" {
		t.Fatalf("removed: %q", got)
	}
}

// BenchmarkManifestToAdd measures the time from a manifest written into the
// directory to its ADD leaving the merge, through inotify (the rescan period
// is an hour). Run with -benchtime=100x for the figure over 100 files; the
// directory grows by one manifest per iteration.
func BenchmarkManifestToAdd(b *testing.B) {
	dir := b.TempDir()
	ops, _ := runAgentConfig(b, Options{Path: dir, CheckFrequency: time.Hour})
	if got := nextOp(b, ops); got != "ADD " {
		b.Fatalf("first report: %q", got)
	}
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("pod-%04d", i)
		start := time.Now()
		writeAtomic(b, filepath.Join(dir, name+".yaml"), manifestYAML(name, "image"))
		want := "ADD default/" + name + "-node1:image"
		if got := nextOp(b, ops); got != want {
			b.Fatalf("got %q, want %q", got, want)
		}
		latencies = append(latencies, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	quantile := func(q float64) float64 {
		return float64(latencies[int(q*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(quantile(0.5), "p50-ms")
	b.ReportMetric(quantile(0.99), "p99-ms")
	b.ReportMetric(float64(latencies[len(latencies)-1].Microseconds())/1000, "max-ms")
}
