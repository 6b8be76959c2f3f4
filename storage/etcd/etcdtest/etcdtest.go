// Package etcdtest starts an embedded etcd for tests: fsync off, free
// ports on 127.0.0.1, data in t.TempDir(), stopped when the test ends.
package etcdtest

import (
	"context"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"

	"github.com/kite-project/kite/storage/etcd/embedded"
)

// Start runs an embedded etcd for the test and returns it with a client.
// Both are closed by t.Cleanup.
func Start(t testing.TB) (*embedded.Server, *clientv3.Client) {
	t.Helper()
	s, err := embedded.Start(context.Background(), embedded.Options{
		DataDir:       t.TempDir(),
		UnsafeNoFsync: true,
		LogLevel:      "fatal",
	})
	if err != nil {
		t.Fatalf("start embedded etcd: %v", err)
	}
	t.Cleanup(s.Close)
	c, err := s.Client()
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return s, c
}

// IncreaseRV is the conformance suites' way to move etcd's revision on:
// it writes a key outside every resource's prefix.
func IncreaseRV(client *clientv3.Client) storagetesting.IncreaseRVFunc {
	return func(ctx context.Context, t *testing.T) int64 {
		resp, err := client.KV.Put(ctx, "increaseRV", "ok")
		if err != nil {
			t.Fatalf("Could not update increaseRV: %v", err)
		}
		return resp.Header.Revision
	}
}

// CreateAll calls create(i) for every i in [0, n) from eight goroutines,
// as parallel writers fill a store, and fails t with the first error.
func CreateAll(t testing.TB, n int, create func(i int) error) {
	t.Helper()
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				if err := create(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}
