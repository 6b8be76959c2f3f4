package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	etcdrpc "go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

func put(ctx context.Context, t *testing.T, c *clientv3.Client, v string) int64 {
	t.Helper()
	resp, err := c.Put(ctx, "/somekey", v)
	if err != nil {
		t.Fatalf("put: %v", err)
	}
	return resp.Header.Revision
}

func compacted(ctx context.Context, t *testing.T, c *clientv3.Client, rev int64) bool {
	t.Helper()
	_, err := c.Get(ctx, "/somekey", clientv3.WithRev(rev))
	if err != nil && !errors.Is(err, etcdrpc.ErrCompacted) {
		t.Fatalf("get at %d: %v", rev, err)
	}
	return err != nil
}

// Each round compacts to the revision seen at the round before, so etcd
// keeps one to two intervals of history; the first round compacts nothing.
func TestCompactRoundsKeepOneRoundOfHistory(t *testing.T) {
	_, c := etcdtest.Start(t)
	ctx := context.Background()

	version, rev, compactRev, err := Compact(ctx, c, 0, 0)
	if err != nil || compactRev != 0 {
		t.Fatalf("first round: compacted %d, err %v; want nothing compacted", compactRev, err)
	}
	first := put(ctx, t, c, "1")

	version, rev, compactRev, err = Compact(ctx, c, version, rev)
	if err != nil {
		t.Fatalf("second round: %v", err)
	}
	if compactRev != first-1 || compacted(ctx, t, c, first) {
		t.Fatalf("second round compacted to %d, want %d (the revision before the first write), first write kept", compactRev, first-1)
	}
	second := put(ctx, t, c, "2")

	_, _, compactRev, err = Compact(ctx, c, version, rev)
	if err != nil {
		t.Fatalf("third round: %v", err)
	}
	if !compacted(ctx, t, c, first) || compacted(ctx, t, c, second) {
		t.Fatalf("third round (to %d): want the first write compacted, the second kept", compactRev)
	}
}

// Of two API servers in the same round, one compacts; the other loses the
// compare-and-swap without error and learns the winner's revision.
func TestCompactConflictHasOneWinner(t *testing.T) {
	_, c := etcdtest.Start(t)
	ctx := context.Background()
	v1, _, _, err := Compact(ctx, c, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	target := put(ctx, t, c, "1")
	put(ctx, t, c, "2")

	// Both saw version v1; the first to write wins.
	if _, _, got, err := Compact(ctx, c, v1, target); err != nil || got != target {
		t.Fatalf("winner compacted to %d, err %v; want %d", got, err, target)
	}
	version, _, got, err := Compact(ctx, c, v1, target+1)
	if err != nil {
		t.Fatalf("loser: %v", err)
	}
	if got != target || version != v1+1 {
		t.Fatalf("loser learned revision %d at version %d, want %d at %d", got, version, target, v1+1)
	}
	if compacted(ctx, t, c, target) {
		t.Fatalf("the loser compacted past the winner's revision")
	}
}

// A running Compactor compacts every interval and reports it; a compactor
// that does not compact itself observes compactions done by others.
func TestCompactorRunCompactsAndObserves(t *testing.T) {
	_, c := etcdtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	active := NewCompactor(CompactorOptions{Client: c, Interval: 20 * time.Millisecond})
	observer := NewCompactor(CompactorOptions{Client: c, Interval: -1})
	done := make(chan struct{}, 2)
	for _, comp := range []*Compactor{active, observer} {
		go func() {
			defer func() { done <- struct{}{} }()
			comp.Run(ctx)
		}()
	}

	first := put(ctx, t, c, "1")
	put(ctx, t, c, "2")
	waitFor(t, 30*time.Second, func() bool { return active.CompactRevision() >= first })
	if !compacted(ctx, t, c, first-1) {
		t.Fatalf("CompactRevision is %d but etcd kept revision %d", active.CompactRevision(), first-1)
	}
	waitFor(t, 30*time.Second, func() bool { return observer.CompactRevision() >= first })

	cancel()
	<-done
	<-done
}
