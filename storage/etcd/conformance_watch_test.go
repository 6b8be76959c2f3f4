package etcd

// The upstream watch conformance suite, called as upstream's
// pkg/storage/etcd3/watcher_test.go calls it (see conformance_store_test.go
// for how feature gates map to options). Not run:
//   - The RangeStream and ConcurrentWatchObjectDecode variants: the store
//     has one code path (paged initial list, serial decode).

import (
	"errors"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"

	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

func TestWatch(t *testing.T) {
	t.Run("Watch", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunTestWatch(ctx, t, store)
	})
	t.Run("ClusterScopedWatch", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunTestClusterScopedWatch(ctx, t, store)
	})
	t.Run("NamespaceScopedWatch", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunTestNamespaceScopedWatch(ctx, t, store)
	})
	t.Run("DeleteTriggerWatch", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunTestDeleteTriggerWatch(ctx, t, store)
	})
	t.Run("WatchFromZero", func(t *testing.T) {
		ctx, store, client := testSetup(t)
		storagetesting.RunTestWatchFromZero(ctx, t, store, compactStorage(store, client.Client))
	})
	t.Run("WatchFromNonZero", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunTestWatchFromNonZero(ctx, t, store)
	})
	t.Run("DelayedWatchDelivery", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunTestDelayedWatchDelivery(ctx, t, store)
	})
	t.Run("WatchError", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunTestWatchError(ctx, t, &storeWithPrefixTransformer{store})
	})
	t.Run("WatchContextCancel", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunTestWatchContextCancel(ctx, t, store)
	})
	t.Run("WatcherTimeout", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunTestWatcherTimeout(ctx, t, store)
	})
	t.Run("WatchDeleteEventObjectHaveLatestRV", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV(ctx, t, store)
	})
	t.Run("WatchInitializationSignal", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunTestWatchInitializationSignal(ctx, t, store)
	})
	t.Run("ProgressNotify", func(t *testing.T) {
		ctx, store, client := testSetup(t, withEtcd(startEtcdWithProgressNotify))
		storagetesting.RunOptionalTestProgressNotify(ctx, t, store, etcdtest.IncreaseRV(client.Client))
	})
	t.Run("WatchWithUnsafeDelete", func(t *testing.T) {
		ctx, store, _ := testSetup(t, withUnsafeCorruptObjectDeletion())
		corruptErr := &CorruptValueError{Err: errors.New("bits flipped")}
		storagetesting.RunTestWatchWithUnsafeDelete(ctx, t, &storeWithTransformerOverride{Interface: store, store: store}, corruptErr)
	})
	t.Run("WatchDispatchBookmarkEvents", func(t *testing.T) {
		ctx, store, _ := testSetup(t, withEtcd(startEtcdWithProgressNotify))
		storagetesting.RunTestWatchDispatchBookmarkEvents(ctx, t, store, false)
	})
	t.Run("SendInitialEventsBackwardCompatibility", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunSendInitialEventsBackwardCompatibility(ctx, t, store)
	})
	t.Run("WatchSemantics", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunWatchSemantics(ctx, t, store)
	})
	t.Run("WatchSemanticInitialEventsExtended", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunWatchSemanticInitialEventsExtended(ctx, t, store)
	})
	t.Run("WatchListMatchSingle", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunWatchListMatchSingle(ctx, t, store)
	})
	t.Run("WatchErrorEventIsBlockingFurtherEvent", func(t *testing.T) {
		ctx, store, _ := testSetup(t)
		storagetesting.RunWatchErrorIsBlockingFurtherEvents(ctx, t, &storeWithPrefixTransformer{store})
	})
}

// startEtcdWithProgressNotify starts an etcd that sends watch progress
// notifications every second (etcd's default is 10 minutes), as upstream's
// ProgressNotify tests configure it. The embedded package does not expose
// this knob, so the test uses etcd's embed directly.
func startEtcdWithProgressNotify(t testing.TB) (*clientv3.Client, *clientv3.Client) {
	t.Helper()
	local := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "fatal"
	cfg.WatchProgressNotifyInterval = time.Second
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{local}, []url.URL{local}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{local}, []url.URL{local}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		t.Fatal("etcd took too long to start")
	}
	endpoint := "http://" + e.Clients[0].Addr().String()
	newClient := func() *clientv3.Client {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("etcd client: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	return newClient(), newClient()
}
