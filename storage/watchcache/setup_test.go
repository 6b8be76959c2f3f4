package watchcache

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/storage"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"

	"github.com/kite-project/kite/listwatch"
	"github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

// The example API group of upstream's storage tests, encoded in protobuf as
// upstream's cacher tests do.
var (
	scheme              = runtime.NewScheme()
	codecs              = serializer.NewCodecFactory(scheme)
	examplev1ProtoCodec runtime.Codec
)

func init() {
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	utilruntime.Must(example.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
	pb := protobuf.NewSerializer(scheme, scheme)
	examplev1ProtoCodec = codecs.CodecForVersions(pb, pb, schema.GroupVersions{examplev1.SchemeGroupVersion}, nil)
}

const podPrefix = "/pods/"

func newPod() runtime.Object     { return &example.Pod{} }
func newPodList() runtime.Object { return &example.PodList{} }

// podAttrs is the pods' GetAttrs of upstream's cacher tests.
func podAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod, ok := obj.(*example.Pod)
	if !ok {
		return nil, nil, fmt.Errorf("not a pod: %T", obj)
	}
	return labels.Set(pod.Labels), fields.Set{
		"spec.nodeName":      pod.Spec.NodeName,
		"spec.restartPolicy": string(pod.Spec.RestartPolicy),
		"status.phase":       string(pod.Status.Phase),
		"metadata.name":      pod.Name,
		"metadata.namespace": pod.Namespace,
	}, nil
}

func podNodeName(obj runtime.Object) string {
	if pod, ok := obj.(*example.Pod); ok {
		return pod.Spec.NodeName
	}
	return ""
}

type setupOptions struct {
	codec runtime.Codec
	// newFunc and newListFunc are the resource's objects; nil: example
	// pods.
	newFunc, newListFunc func() runtime.Object
	attrFunc             storage.AttrFunc
	// unsafeDelete is the etcd store's equivalent of upstream's
	// AllowUnsafeMalformedObjectDeletion gate.
	unsafeDelete bool
	keyFunc      func(runtime.Object) (string, error)
	indexers     storage.IndexerFuncs
	transformer  value.Transformer
	tweak        func(*Options)
}

type setupOption func(*setupOptions)

// withNodeNameIndex mirrors the pods' indexer (pkg/registry/core/pod).
func withNodeNameIndex(o *setupOptions) {
	o.indexers = storage.IndexerFuncs{"spec.nodeName": podNodeName}
}

func withClusterScopedKeyFunc(o *setupOptions) {
	o.keyFunc = func(obj runtime.Object) (string, error) { return storage.NoNamespaceKeyFunc(podPrefix, obj) }
}

func withCodec(c runtime.Codec) setupOption { return func(o *setupOptions) { o.codec = c } }
func withTransformer(tr value.Transformer) setupOption {
	return func(o *setupOptions) { o.transformer = tr }
}

func withUnsafeCorruptObjectDeletion(o *setupOptions) { o.unsafeDelete = true }

func withOptions(f func(*Options)) setupOption {
	return func(o *setupOptions) { o.tweak = f }
}

// testEnv is what a test may need besides the cache.
type testEnv struct {
	etcd     *clientv3.Client // a plain client of the same etcd
	store    *etcd.Store
	recorder *storagetesting.KubernetesRecorder
	cache    *Cache
}

// testSetup starts an etcd, our etcd store over it and a cache over the
// store, and waits for the cache's first list, as upstream's cacher
// testSetup does.
func testSetup(t testing.TB, opts ...setupOption) (context.Context, *Cache, *testEnv) {
	t.Helper()
	o := setupOptions{
		keyFunc:     func(obj runtime.Object) (string, error) { return storage.NamespaceKeyFunc(podPrefix, obj) },
		transformer: identity.NewEncryptCheckTransformer(),
		codec:       examplev1ProtoCodec,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.newFunc == nil {
		o.newFunc, o.newListFunc, o.attrFunc = newPod, newPodList, podAttrs
	}
	srv, raw := etcdtest.Start(t)
	storeClient, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { storeClient.Close() })
	client := etcd.NewClient(storeClient)
	recorder := storagetesting.NewKubernetesRecorder(client.Kubernetes)
	client.KV = storagetesting.NewKVRecorder(client.KV, recorder)
	client.Kubernetes = recorder

	compactor := etcd.NewCompactor(etcd.CompactorOptions{Client: raw, Interval: -1})
	cctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		compactor.Run(cctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	store, err := etcd.New(etcd.Options{
		Client:         client,
		Codec:          o.codec,
		NewFunc:        o.newFunc,
		NewListFunc:    o.newListFunc,
		ResourcePrefix: podPrefix,
		GroupResource:  schema.GroupResource{Resource: "pods"},
		Transformer:    o.transformer,
		Compactor:      compactor,
		Lease:          etcd.LeaseOptions{ReuseDurationSeconds: 1},

		UnsafeCorruptObjectDeletion: o.unsafeDelete,
	})
	if err != nil {
		t.Fatal(err)
	}
	copts := Options{
		Store:          store,
		ResourcePrefix: podPrefix,
		GroupResource:  schema.GroupResource{Resource: "pods"},
		KeyFunc:        o.keyFunc,
		NewFunc:        o.newFunc,
		NewListFunc:    o.newListFunc,
		AttrFunc:       o.attrFunc,
		Indexers:       o.indexers,
	}
	if o.tweak != nil {
		o.tweak(&copts)
	}
	c, err := New(copts)
	if err != nil {
		t.Fatal(err)
	}
	c.Start(context.Background())
	t.Cleanup(c.Stop)
	ctx, cancelWait := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelWait()
	if err := c.Wait(ctx); err != nil {
		t.Fatalf("cache not ready: %v", err)
	}
	return context.Background(), c, &testEnv{etcd: raw, store: store, recorder: recorder, cache: c}
}

// compactStore waits until the cache has seen resourceVersion, compacts
// etcd there and waits until the store has observed it, as upstream's
// compactWatch does for the cacher. Without the first wait, a watch opened
// just after would start before the cache had the compacting write, and be
// served (rightly) from the cache's older state rather than the compacted
// one the suite expects.
func compactStore(env *testEnv) storagetesting.Compaction {
	return func(ctx context.Context, t *testing.T, resourceVersion string) {
		rv, err := storage.APIObjectVersioner{}.ParseResourceVersion(resourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		if err := env.cache.waitFresh(ctx, rv); err != nil {
			t.Fatalf("cache did not reach %d: %v", rv, err)
		}
		if err := etcd.CompactTo(ctx, env.etcd, int64(rv)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, func() bool { return env.store.CompactRevision() >= int64(rv) })
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
		time.Sleep(5 * time.Millisecond)
	}
}

// compile-time check that the listwatch seam fits the default adapter.
var _ listwatch.ListerWatcher = (*storeListerWatcher)(nil)
