package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCompactionIntervalCompactsOldRevisions checks that
// --etcd-compaction-interval reaches the compactor: old revisions go away
// and compact_rev_key, kube-apiserver's record of compactions, is written.
func TestCompactionIntervalCompactsOldRevisions(t *testing.T) {
	k := StartKite(t, "server", "--secure-port=0", "--port=0", "--data-dir", filepath.Join(t.TempDir(), "data"), "--etcd-compaction-interval", "100ms")
	c := k.EtcdClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first, err := c.Put(ctx, "/registry/e2e/key", "0")
	if err != nil {
		t.Fatal(err)
	}
	// Keep writing until a read at the first revision is refused as
	// compacted. The compactor compacts to the revision of its previous
	// round, so this takes two or three intervals.
	for i := 1; ; i++ {
		if _, err := c.Put(ctx, "/registry/e2e/key", fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		_, err := c.Get(ctx, "/registry/e2e/key", clientv3.WithRev(first.Header.Revision))
		if errors.Is(err, rpctypes.ErrCompacted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("revision never compacted")
		case <-time.After(50 * time.Millisecond):
		}
	}
	r, err := c.Get(ctx, "compact_rev_key")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 1 {
		t.Fatal("compact_rev_key was not written")
	}
	stopCleanly(t, k, syscall.SIGTERM)
}
