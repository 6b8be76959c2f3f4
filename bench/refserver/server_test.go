package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kite-project/kite/workload"
)

// TestWorkloadsAgainstTheReference runs every kite bench workload at a
// tiny size against the reference server, in JSON and protobuf: the
// reference must serve everything the bench asks of a server. No goleak
// here: k8s.io/apiserver's generic server leaves goroutines behind after
// it stops (its own, and klog's).
func TestWorkloadsAgainstTheReference(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, options{dataDir: dir, unsafeNoFsync: true}, w)
		w.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (run: %v)", err, <-done)
	}
	go io.Copy(io.Discard, r)
	path := strings.TrimSpace(strings.TrimPrefix(line, "ready "))
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	// Count connections: the server must keep them open across requests,
	// or every request pays a TLS handshake and the figures measure that.
	var dials atomic.Int64
	var dialer net.Dialer
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	for _, contentType := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		cfg.ContentType = contentType
		report, err := workload.Run(ctx, cfg, workload.Options{
			Pods: 30, Nodes: 3, Writers: 3, Watchers: 4, Updates: 6, Repeats: 1, DeliveryTimeout: time.Minute,
		})
		if err != nil {
			t.Fatalf("%s: %v", contentType, err)
		}
		for _, res := range report.Results {
			if d := res.Delivery; d != nil && (d.Lost != 0 || d.Duplicates != 0 || d.Expected == 0) {
				t.Errorf("%s: %s: %+v", contentType, res.Name, d)
			}
		}
		if m := report.Memory; m == nil || m.RSSAfter <= 0 {
			t.Errorf("%s: memory %+v, want process_resident_memory_bytes", contentType, m)
		}
	}
	if n := dials.Load(); n > 4 {
		t.Errorf("the client opened %d connections; want a few reused ones", n)
	}
}
