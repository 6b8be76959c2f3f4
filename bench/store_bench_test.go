package bench

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/storage"
	upstream "k8s.io/apiserver/pkg/storage/etcd3"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	kite "github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

// Dimensions are smaller than upstream's (which store 110k-150k pods) so
// that one run of both stores, five times over, fits in minutes on two
// cores. The shape (exemplar pods spread over namespaces and nodes) is
// upstream's.
var (
	listDims  = dims{namespaces: 100, podsPerNamespace: 50, nodes: 100}
	writeDims = dims{namespaces: 50, podsPerNamespace: 100, nodes: 500}
)

type dims struct{ namespaces, podsPerNamespace, nodes int }

func (d dims) String() string {
	return fmt.Sprintf("Namespaces=%d/Pods=%d/Nodes=%d", d.namespaces, d.namespaces*d.podsPerNamespace, d.nodes)
}

// newStore is one implementation under test: it returns a store of example
// Pods over client, and a function that stops what it started.
type newStore func(b *testing.B, client *clientv3.Client) storage.Interface

var stores = []struct {
	name string
	new  newStore
}{
	{"upstream", newUpstreamStore},
	{"kite", newKiteStore},
}

func BenchmarkStoreList(b *testing.B) {
	klog.SetLogger(logr.Discard())
	data := storagetesting.PrepareBenchmarkData(listDims.namespaces, listDims.podsPerNamespace, listDims.nodes)
	for _, s := range stores {
		b.Run(fmt.Sprintf("Store=%s/%s", s.name, listDims), func(b *testing.B) {
			// Each store gets a fresh etcd: upstream's list benchmark
			// derives its resourceVersions from the number of pods created.
			_, client := etcdtest.Start(b)
			store := s.new(b, client)
			ctx := context.Background()
			if err := storagetesting.PrecreateBenchmarkPods(ctx, store, data); err != nil {
				b.Fatal(err)
			}
			storagetesting.RunBenchmarkStoreList(ctx, b, store, data, false)
		})
	}
}

func BenchmarkStoreWriteThroughput(b *testing.B) {
	klog.SetLogger(logr.Discard())
	data := storagetesting.PrepareBenchmarkData(writeDims.namespaces, writeDims.podsPerNamespace, writeDims.nodes)
	for _, s := range stores {
		b.Run(fmt.Sprintf("Store=%s/%s", s.name, writeDims), func(b *testing.B) {
			_, client := etcdtest.Start(b)
			store := s.new(b, client)
			storagetesting.RunBenchmarkWriteThroughput(context.Background(), b, store, data, false, nil)
		})
	}
}

// codec stores example Pods as protobuf, as kube-apiserver and Kite store
// objects in etcd. Both stores get the same one.
var codec = func() runtime.Codec {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	utilruntime.Must(example.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
	codecs := serializer.NewCodecFactory(scheme)
	return codecs.CodecForVersions(protobuf.NewSerializer(scheme, scheme), codecs.UniversalDeserializer(), examplev1.SchemeGroupVersion, nil)
}()

func newPod() runtime.Object     { return &example.Pod{} }
func newPodList() runtime.Object { return &example.PodList{} }

var pods = schema.GroupResource{Resource: "pods"}

// newUpstreamStore builds upstream's etcd3 store as kube-apiserver does
// when no encryption is configured.
func newUpstreamStore(b *testing.B, c *clientv3.Client) storage.Interface {
	// kite.NewClient wraps c exactly as kubernetes.New does.
	client := kite.NewClient(c)
	compactor := upstream.NewCompactor(c, 0, clock.RealClock{}, nil)
	b.Cleanup(compactor.Stop)
	versioner := storage.APIObjectVersioner{}
	s, err := upstream.New(client, compactor, codec, newPod, newPodList, "", "/pods/", pods,
		identity.NewEncryptCheckTransformer(), upstream.NewDefaultLeaseManagerConfig(),
		upstream.NewDefaultDecoder(codec, versioner), versioner)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

// newKiteStore builds Kite's store as the Kite server does.
func newKiteStore(b *testing.B, c *clientv3.Client) storage.Interface {
	compactor := kite.NewCompactor(kite.CompactorOptions{Client: c, Interval: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		compactor.Run(ctx)
	}()
	b.Cleanup(func() { cancel(); <-done })
	s, err := kite.New(kite.Options{
		Client:         kite.NewClient(c),
		Codec:          codec,
		NewFunc:        newPod,
		NewListFunc:    newPodList,
		ResourcePrefix: "/pods/",
		GroupResource:  pods,
		Compactor:      compactor,
	})
	if err != nil {
		b.Fatal(err)
	}
	return s
}
