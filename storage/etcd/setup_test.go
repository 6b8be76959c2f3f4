package etcd

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/api/apitesting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/storage"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

// defaultTestPrefix is what the conformance tests' PrefixTransformer puts
// in front of every value, as upstream's etcd3 tests do.
const defaultTestPrefix = "test!"

// newTestCodecs returns the codecs of upstream's example API group, the
// types the conformance suite stores.
func newTestCodecs() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	utilruntime.Must(example.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
	return serializer.NewCodecFactory(scheme)
}

var codecs = newTestCodecs()

// setupOptions mirror upstream etcd3 testSetup's options.
type setupOptions struct {
	codec          runtime.Codec
	newFunc        func() runtime.Object
	prefix         string
	resourcePrefix string
	transformer    value.Transformer
	unsafeCorrupt  bool
	// etcd starts an etcd for the test and returns two clients of it: one
	// for the store, one for the compactor (so that the compactor's reads
	// are not counted by the store's recorders).
	etcd func(t testing.TB) (store, compactor *clientv3.Client)
}

type setupOption func(*setupOptions)

func withCodec(c runtime.Codec) setupOption { return func(o *setupOptions) { o.codec = c } }
func withPrefix(p string) setupOption       { return func(o *setupOptions) { o.prefix = p } }
func withTransformer(t value.Transformer) setupOption {
	return func(o *setupOptions) { o.transformer = t }
}

// withUnsafeCorruptObjectDeletion is upstream's
// AllowUnsafeMalformedObjectDeletion feature gate.
func withUnsafeCorruptObjectDeletion() setupOption {
	return func(o *setupOptions) { o.unsafeCorrupt = true }
}

func withEtcd(f func(testing.TB) (*clientv3.Client, *clientv3.Client)) setupOption {
	return func(o *setupOptions) { o.etcd = f }
}

// testSetup starts an etcd for the test and a store of example Pods on it,
// with the client wrapped in upstream's recorders and a compactor that
// observes compactions, as upstream's etcd3 testSetup does.
func testSetup(t testing.TB, opts ...setupOption) (context.Context, *Store, *kubernetes.Client) {
	t.Helper()
	o := setupOptions{
		codec:          apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion),
		newFunc:        func() runtime.Object { return &example.Pod{} },
		resourcePrefix: "/pods/",
		transformer:    storagetesting.NewPrefixTransformer([]byte(defaultTestPrefix), false),
		etcd: func(t testing.TB) (*clientv3.Client, *clientv3.Client) {
			srv, c := etcdtest.Start(t)
			c2, err := srv.Client()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c2.Close() })
			return c, c2
		},
	}
	for _, opt := range opts {
		opt(&o)
	}
	storeClient, compactorClient := o.etcd(t)
	client := NewClient(storeClient)
	recorder := storagetesting.NewKubernetesRecorder(client.Kubernetes)
	client.KV = storagetesting.NewKVRecorder(client.KV, recorder)
	client.Kubernetes = recorder

	compactor := NewCompactor(CompactorOptions{Client: compactorClient, Interval: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		compactor.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	s, err := New(Options{
		Client:         client,
		Codec:          o.codec,
		NewFunc:        o.newFunc,
		NewListFunc:    func() runtime.Object { return &example.PodList{} },
		Prefix:         o.prefix,
		ResourcePrefix: o.resourcePrefix,
		GroupResource:  schema.GroupResource{Resource: "pods"},
		Transformer:    o.transformer,
		Compactor:      compactor,
		Lease:          LeaseOptions{ReuseDurationSeconds: 1},
		// As an API server doing priority and fairness wires it.
		WatchInitialized:            utilflowcontrol.WatchInitialized,
		UnsafeCorruptObjectDeletion: o.unsafeCorrupt,
	})
	if err != nil {
		t.Fatal(err)
	}
	return context.Background(), s, client
}

// checkStorageInvariants checks what is stored: the transformer's prefix,
// then an object without resourceVersion or selfLink.
func checkStorageInvariants(etcdClient *clientv3.Client, codec runtime.Codec) storagetesting.KeyValidation {
	return func(ctx context.Context, t *testing.T, key string) {
		resp, err := etcdClient.KV.Get(ctx, key)
		if err != nil {
			t.Fatalf("etcdClient.KV.Get failed: %v", err)
		}
		if len(resp.Kvs) == 0 {
			t.Fatalf("expecting non empty result on key: %s", key)
		}
		decoded, err := runtime.Decode(codec, resp.Kvs[0].Value[len(defaultTestPrefix):])
		if err != nil {
			t.Fatalf("expecting successful decode of object from %v\n%v", err, string(resp.Kvs[0].Value))
		}
		obj := decoded.(*example.Pod)
		if obj.ResourceVersion != "" {
			t.Errorf("stored object should have empty resource version")
		}
		if obj.SelfLink != "" {
			t.Errorf("stored output should have empty selfLink")
		}
	}
}

// compactStorage compacts etcd to the given resourceVersion and waits
// until the store observes it.
func compactStorage(s *Store, client *clientv3.Client) storagetesting.Compaction {
	return func(ctx context.Context, t *testing.T, resourceVersion string) {
		rv, err := storage.APIObjectVersioner{}.ParseResourceVersion(resourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		if err := CompactTo(ctx, client, int64(rv)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, func() bool { return s.CompactRevision() >= int64(rv) })
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// storeWithPrefixTransformer lets a conformance test swap the store's
// PrefixTransformer.
type storeWithPrefixTransformer struct {
	*Store
}

func (s *storeWithPrefixTransformer) UpdatePrefixTransformer(modifier storagetesting.PrefixTransformerModifier) func() {
	orig := s.transformer.(*storagetesting.PrefixTransformer)
	cp := *orig
	s.transformer = modifier(&cp)
	return func() { s.transformer = orig }
}

// storeWithTransformerOverride lets a conformance test replace the
// store's transformer.
type storeWithTransformerOverride struct {
	storage.Interface
	store *Store
}

func (s *storeWithTransformerOverride) UpdateTransformer(modifier storagetesting.TransformerModifier) func() {
	orig := s.store.transformer
	s.store.transformer = modifier(orig)
	return func() { s.store.transformer = orig }
}
