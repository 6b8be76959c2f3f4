package watchcache

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	exampleapi "k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher"
	upstreametcd "k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kite-project/kite/registry/builtin"
	kiteetcd "github.com/kite-project/kite/storage/etcd"
	"github.com/kite-project/kite/storage/etcd/etcdtest"
	"github.com/kite-project/kite/storage/intern"
	kitecache "github.com/kite-project/kite/storage/watchcache"
)

// The codecs know upstream's example API group (which upstream's storage
// benchmarks use) and core/v1 (our own benchmarks use real Pods). Both
// caches store protobuf, as kube-apiserver and Kite do.
var exampleCodec, corev1Codec = codecs()

func codecs() (example, core kruntime.Codec) {
	scheme := kruntime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	utilruntime.Must(exampleapi.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
	utilruntime.Must(corev1.AddToScheme(scheme))
	factory := serializer.NewCodecFactory(scheme)
	pb := protobuf.NewSerializer(scheme, scheme)
	example = factory.CodecForVersions(pb, pb, schema.GroupVersions{examplev1.SchemeGroupVersion}, nil)
	core = factory.CodecForVersions(pb, pb, schema.GroupVersions{corev1.SchemeGroupVersion}, schema.GroupVersions{corev1.SchemeGroupVersion})
	return example, core
}

var podsResource = schema.GroupResource{Resource: "pods"}

const podPrefix = "/pods/"

func podKey(obj kruntime.Object) (string, error) { return storage.NamespaceKeyFunc(podPrefix, obj) }

// kind is the type the caches hold, with the functions the registry of
// pods gives a cache: attributes, the spec.nodeName indexer (upstream's
// trigger and list index; our cache's Indexers).
type kind struct {
	codec    kruntime.Codec
	newObj   func() kruntime.Object
	newList  func() kruntime.Object
	attrs    storage.AttrFunc
	nodeName func(obj kruntime.Object) string
	// intern is what the kind's registry strategy shares in the cache
	// (Strategy.Intern); nil for the example pods, which Kite does not
	// serve.
	intern func(t *intern.Table, obj kruntime.Object)
}

var examplePods = kind{
	codec:   exampleCodec,
	newObj:  func() kruntime.Object { return &exampleapi.Pod{} },
	newList: func() kruntime.Object { return &exampleapi.PodList{} },
	attrs: func(obj kruntime.Object) (labels.Set, fields.Set, error) {
		pod, ok := obj.(*exampleapi.Pod)
		if !ok {
			return nil, nil, fmt.Errorf("not a pod: %T", obj)
		}
		return labels.Set(pod.Labels), fields.Set{
			"metadata.name":      pod.Name,
			"metadata.namespace": pod.Namespace,
			"spec.nodeName":      pod.Spec.NodeName,
			"spec.restartPolicy": string(pod.Spec.RestartPolicy),
			"status.phase":       string(pod.Status.Phase),
		}, nil
	},
	nodeName: func(obj kruntime.Object) string {
		if pod, ok := obj.(*exampleapi.Pod); ok {
			return pod.Spec.NodeName
		}
		return ""
	},
}

var corev1Pods = kind{
	intern:  builtin.InternPod,
	codec:   corev1Codec,
	newObj:  func() kruntime.Object { return &corev1.Pod{} },
	newList: func() kruntime.Object { return &corev1.PodList{} },
	attrs: func(obj kruntime.Object) (labels.Set, fields.Set, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil, fmt.Errorf("not a pod: %T", obj)
		}
		// pkg/registry/core/pod's ToSelectableFields, minus the ones no
		// benchmark selects on.
		return labels.Set(pod.Labels), fields.Set{
			"metadata.name":      pod.Name,
			"metadata.namespace": pod.Namespace,
			"spec.nodeName":      pod.Spec.NodeName,
			"spec.restartPolicy": string(pod.Spec.RestartPolicy),
			"spec.schedulerName": pod.Spec.SchedulerName,
			"status.phase":       string(pod.Status.Phase),
			"status.podIP":       pod.Status.PodIP,
		}, nil
	},
	nodeName: func(obj kruntime.Object) string {
		if pod, ok := obj.(*corev1.Pod); ok {
			return pod.Spec.NodeName
		}
		return ""
	},
}

// A cache under test: its storage.Interface, how to stop it, and the
// store below it, which counts the lists that reach etcd.
type underTest struct {
	storage.Interface
	stop  func()
	store *countingStore
}

// countingStore counts the lists that go past the cache to etcd (the
// cache's own fill included).
type countingStore struct {
	storage.Interface
	lists atomic.Int64
}

func (s *countingStore) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj kruntime.Object) error {
	s.lists.Add(1)
	return s.Interface.GetList(ctx, key, opts, listObj)
}

// impl builds one cache over an etcd client, waiting until it is ready.
type impl struct {
	name string
	// store builds the etcd store the cache sits on.
	store func(b testing.TB, c *clientv3.Client, k kind) storage.Interface
	// cache builds the cache over the store and returns it once ready.
	cache func(b testing.TB, s storage.Interface, k kind) underTest
}

// impls alternate in every benchmark: same data, same etcd, one run.
var impls = []impl{
	{"kite", newKiteStore, newKiteCache},
	{"upstream", newUpstreamStore, newUpstreamCache},
}

// start builds the store and the cache of i, ready.
func (i impl) start(b testing.TB, c *clientv3.Client, k kind) underTest {
	s := &countingStore{Interface: i.store(b, c, k)}
	u := i.cache(b, s, k)
	u.store = s
	return u
}

// newKiteStore builds Kite's etcd store as the Kite server does.
func newKiteStore(b testing.TB, c *clientv3.Client, k kind) storage.Interface {
	compactor := kiteetcd.NewCompactor(kiteetcd.CompactorOptions{Client: c, Interval: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		compactor.Run(ctx)
	}()
	b.Cleanup(func() { cancel(); <-done })
	s, err := kiteetcd.New(kiteetcd.Options{
		Client:         kiteetcd.NewClient(c),
		Codec:          k.codec,
		NewFunc:        k.newObj,
		NewListFunc:    k.newList,
		ResourcePrefix: podPrefix,
		GroupResource:  podsResource,
		Compactor:      compactor,
	})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// newKiteCache builds Kite's watch cache as the pods registry does.
func newKiteCache(b testing.TB, s storage.Interface, k kind) underTest {
	c, err := kitecache.New(kitecache.Options{
		Store:          s,
		ResourcePrefix: podPrefix,
		GroupResource:  podsResource,
		KeyFunc:        podKey,
		NewFunc:        k.newObj,
		NewListFunc:    k.newList,
		AttrFunc:       k.attrs,
		Indexers:       storage.IndexerFuncs{"spec.nodeName": k.nodeName},
		Intern:         k.intern,
	})
	if err != nil {
		b.Fatal(err)
	}
	c.Start(context.Background())
	if err := c.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	// stop drops the cache once stopped, so that a finished benchmark's
	// cleanup does not keep it (and its pods) alive.
	var mu sync.Mutex
	held := c
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		if held != nil {
			held.Stop()
			held = nil
		}
	}
	b.Cleanup(stop)
	return underTest{Interface: c, stop: stop}
}

// newUpstreamStore builds upstream's etcd3 store as kube-apiserver does
// without encryption at rest.
func newUpstreamStore(b testing.TB, c *clientv3.Client, k kind) storage.Interface {
	compactor := upstreametcd.NewCompactor(c, 0, clock.RealClock{}, nil)
	b.Cleanup(compactor.Stop)
	versioner := storage.APIObjectVersioner{}
	s, err := upstreametcd.New(kiteetcd.NewClient(c), compactor, k.codec, k.newObj, k.newList, "", podPrefix, podsResource,
		identity.NewEncryptCheckTransformer(), upstreametcd.NewDefaultLeaseManagerConfig(),
		upstreametcd.NewDefaultDecoder(k.codec, versioner), versioner)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}

// newUpstreamCache builds upstream's cacher as kube-apiserver's pods
// registry does (pkg/registry/core/pod: the spec.nodeName trigger and
// index), behind the CacheDelegator that routes requests to it.
func newUpstreamCache(b testing.TB, s storage.Interface, k kind) underTest {
	c, err := cacher.NewCacherFromConfig(cacher.Config{
		Storage:             s,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       podsResource,
		EventsHistoryWindow: cacher.DefaultEventFreshDuration,
		ResourcePrefix:      podPrefix,
		KeyFunc:             podKey,
		GetAttrsFunc:        k.attrs,
		IndexerFuncs:        storage.IndexerFuncs{"spec.nodeName": k.nodeName},
		Indexers: &cache.Indexers{
			"f:spec.nodeName": func(obj any) ([]string, error) {
				return []string{k.nodeName(obj.(kruntime.Object))}, nil
			},
		},
		NewFunc:     k.newObj,
		NewListFunc: k.newList,
		Codec:       k.codec,
		Clock:       clock.RealClock{},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	d := cacher.NewCacheDelegator(c, s)
	var mu sync.Mutex
	held, heldD := c, d
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		if held != nil {
			heldD.Stop()
			held.Stop()
			held, heldD = nil, nil
		}
	}
	b.Cleanup(stop)
	return underTest{Interface: d, stop: stop}
}

// startEtcd starts one embedded etcd (fsync off) for a benchmark.
func startEtcd(b testing.TB) *clientv3.Client {
	_, c := etcdtest.Start(b)
	return c
}

// smallPod is a realistic small pod (one container, labels, env, resources,
// a status): 535 bytes of protobuf (TestSmallPodSize), like perf-anchors'
// 653-byte "small pod".
func smallPod(i int, ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      name,
			UID:       types.UID(fmt.Sprintf("%08x-5c1e-4d2a-9f3b-%012x", i, i*7919)),
			Labels:    map[string]string{"app": "web", "tier": "frontend", "pod-template-hash": "5d8f7c9b6"},
			Annotations: map[string]string{
				"kubernetes.io/config.source": "api",
			},
			CreationTimestamp: metav1.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
		},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: corev1.RestartPolicyAlways,
			SchedulerName: "default-scheduler",
			Containers: []corev1.Container{{
				Name:  "web",
				Image: "registry.example.com/team/web:1.27.3",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "MODE", Value: "production"},
					{Name: "LOG_LEVEL", Value: "info"},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("100m"),
						corev1.ResourceMemory: resource.MustParse("128Mi"),
					},
				},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy:          corev1.PullIfNotPresent,
			}},
			DNSPolicy:                     corev1.DNSClusterFirst,
			ServiceAccountName:            "default",
			TerminationGracePeriodSeconds: ptr(int64(30)),
		},
		Status: corev1.PodStatus{
			Phase:    corev1.PodRunning,
			PodIP:    "10.244.1.17",
			HostIP:   "192.168.0.11",
			QOSClass: corev1.PodQOSBurstable,
		},
	}
}

func ptr[T any](v T) *T { return &v }

// Dimensions of the core/v1 data: 100 pods per node (a kubelet's ~110),
// over 100 namespaces.
const podsPerNode = 100

func nodeName(i int) string { return "node-" + strconv.Itoa(i) }

// seedPods creates n small pods through store with parallel writers.
func seedPods(b testing.TB, store storage.Interface, n int) {
	const workers = 32
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	next := make(chan int, 1024)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := &corev1.Pod{}
			for i := range next {
				p := smallPod(i, "ns-"+strconv.Itoa(i%100), "pod-"+strconv.Itoa(i), nodeName(i/podsPerNode))
				key, _ := podKey(p)
				if err := store.Create(ctx, key, p, out, 0); err != nil && !storage.IsExist(err) {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatalf("seed: %v", err)
	default:
	}
}

// settledHeap is the live heap once it stops shrinking: a stopped cache's
// goroutines (upstream's end some time after Stop) may keep it reachable
// for a while. It waits at most two seconds.
func settledHeap() uint64 {
	prev := heapAfterGC()
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		h := heapAfterGC()
		if float64(h) >= 0.99*float64(prev) {
			return h
		}
		prev = h
	}
	return prev
}

// heapAfterGC is the live heap after two full collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
