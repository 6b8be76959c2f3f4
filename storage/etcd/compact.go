package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
)

// CompactRevKey is the etcd key through which API servers sharing one etcd
// agree on compactions: its value is the last compacted revision, its
// version the number of compaction rounds (kube-apiserver's key, so Kite
// and kube-apiserver can share a cluster).
const CompactRevKey = "compact_rev_key"

// DefaultCompactionInterval is kube-apiserver's --etcd-compaction-interval.
const DefaultCompactionInterval = 5 * time.Minute

// CompactorOptions configure a Compactor.
type CompactorOptions struct {
	// Client is the etcd client. Required.
	Client *clientv3.Client
	// Interval between compaction rounds. 0 means
	// DefaultCompactionInterval; negative means never compact, only
	// observe the compactions others do.
	Interval time.Duration
}

// Compactor removes old revisions from etcd like kube-apiserver does, and
// tracks the last compacted revision for stores (CompactRevision).
//
// Every Interval it takes part in a round: a compare-and-swap on the
// version of CompactRevKey elects one compactor among all API servers
// sharing the cluster; the winner compacts to the revision it saw at the
// previous round, so etcd keeps between one and two intervals of history.
// The first round after start never compacts.
type Compactor struct {
	client   *clientv3.Client
	interval time.Duration

	// mu guards rev.
	mu  sync.Mutex
	rev int64
}

// NewCompactor returns a Compactor; Run starts it.
func NewCompactor(opts CompactorOptions) *Compactor {
	if opts.Interval == 0 {
		opts.Interval = DefaultCompactionInterval
	}
	return &Compactor{client: opts.Client, interval: opts.Interval}
}

// CompactRevision returns the last compacted revision observed, by this
// compactor or (through CompactRevKey) by any other; 0 if none.
func (c *Compactor) CompactRevision() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev
}

func (c *Compactor) observe(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rev = max(c.rev, rev)
}

// Run compacts every interval and follows CompactRevKey until ctx ends.
// Errors are logged and retried: compaction is housekeeping.
func (c *Compactor) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if c.interval > 0 {
		wg.Go(func() { c.compactLoop(ctx) })
	}
	c.watchLoop(ctx)
	wg.Wait()
}

func (c *Compactor) compactLoop(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	var version, rev int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var compacted int64
		var err error
		version, rev, compacted, err = Compact(ctx, c.client, version, rev)
		if err != nil && ctx.Err() != nil {
			return // stopped in the middle of a compaction: not a failure
		}
		if err != nil {
			klog.Errorf("etcd: compaction at endpoints %v failed: %v", c.client.Endpoints(), err)
			continue
		}
		c.observe(compacted)
	}
}

// watchLoop follows CompactRevKey so that compactions done by other API
// servers (or by CompactTo) are observed too.
func (c *Compactor) watchLoop(ctx context.Context) {
	for {
		resp, err := c.client.Get(ctx, CompactRevKey)
		if err == nil {
			if len(resp.Kvs) > 0 {
				c.observeValue(resp.Kvs[0].Value)
			}
			for w := range c.client.Watch(ctx, CompactRevKey, clientv3.WithRev(resp.Header.Revision+1)) {
				if err := w.Err(); err != nil {
					klog.V(2).Infof("etcd: watch of %s: %v", CompactRevKey, err)
					break
				}
				for _, e := range w.Events {
					c.observeValue(e.Kv.Value)
				}
			}
		} else if ctx.Err() == nil {
			klog.Errorf("etcd: read %s: %v", CompactRevKey, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (c *Compactor) observeValue(v []byte) {
	rev, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		klog.Errorf("etcd: %s holds %q, not a revision: %v", CompactRevKey, v, err)
		return
	}
	c.observe(rev)
}

// Compact is one round of the compaction protocol (upstream etcd3's
// Compact): if the version of CompactRevKey is still expectVersion, write
// rev to it and compact etcd to rev (unless rev is 0, the first round).
// It returns the key's version and etcd's revision now, to pass to the next
// round, and the revision compacted to (or that the round's winner wrote),
// 0 if none. Losing the compare-and-swap is not an error.
func Compact(ctx context.Context, client *clientv3.Client, expectVersion, rev int64) (version, currentRev, compactRev int64, err error) {
	resp, err := client.KV.Txn(ctx).If(
		clientv3.Compare(clientv3.Version(CompactRevKey), "=", expectVersion),
	).Then(
		clientv3.OpPut(CompactRevKey, strconv.FormatInt(rev, 10)),
	).Else(
		clientv3.OpGet(CompactRevKey),
	).Commit()
	if err != nil {
		return expectVersion, rev, 0, fmt.Errorf("compare-and-swap %s at version %d: %w", CompactRevKey, expectVersion, err)
	}
	currentRev = resp.Header.Revision
	if !resp.Succeeded {
		kv := resp.Responses[0].GetResponseRange().Kvs[0]
		compactRev, err = strconv.ParseInt(string(kv.Value), 10, 64)
		if err != nil {
			return kv.Version, currentRev, 0, nil
		}
		return kv.Version, currentRev, compactRev, nil
	}
	version = expectVersion + 1
	if rev == 0 {
		return version, currentRev, 0, nil
	}
	if _, err := client.Compact(ctx, rev); err != nil {
		return version, currentRev, 0, fmt.Errorf("compact etcd to revision %d: %w", rev, err)
	}
	return version, currentRev, rev, nil
}

// CompactTo compacts etcd to rev now, through the same protocol, so that
// compactors following CompactRevKey observe it. For tests and tools.
func CompactTo(ctx context.Context, client *clientv3.Client, rev int64) error {
	if rev <= 0 {
		return fmt.Errorf("compact to revision %d: revision must be positive", rev)
	}
	var version int64
	for range 3 {
		var err error
		var compacted int64
		version, _, compacted, err = Compact(ctx, client, version, rev)
		if err != nil {
			return err
		}
		if compacted == rev {
			return nil
		}
		// Lost the compare-and-swap to a concurrent round: version is now
		// the key's current one, try again.
	}
	return errors.New("compact: lost the compare-and-swap on " + CompactRevKey + " three times")
}
