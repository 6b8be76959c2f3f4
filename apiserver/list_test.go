package apiserver

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	protobufserializer "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/kite-project/kite/storage/watchcache"
)

// upstreamListEncoders are apimachinery's serializers with streaming
// collection encoding on, as kube-apiserver writes lists.
func upstreamListEncoders(t *testing.T) map[runtime.Identifier]runtime.Encoder {
	t.Helper()
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return map[runtime.Identifier]runtime.Encoder{
		listItemJSON: jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme,
			jsonserializer.SerializerOptions{StreamingCollectionsEncoding: true}),
		listItemProtobuf: protobufserializer.NewSerializerWithOptions(scheme, scheme,
			protobufserializer.SerializerOptions{StreamingCollectionsEncoding: true}),
	}
}

func listPod(name string, annotations map[string]string) *v1.Pod {
	return &v1.Pod{
		// The cache's objects may carry their kind; list items must not.
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", ResourceVersion: "7", UID: "u-" + "name",
			Labels: map[string]string{"app": "web"}, Annotations: annotations,
		},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
}

// TestCachedListIsUpstreamsStreamingEncoding checks that a list written
// from cached item bytes is byte for byte what apimachinery's streaming
// JSON and protobuf encoders write for the same typed list, whose items
// have no kind: empty lists, pages with continue and remainingItemCount,
// characters JSON escapes, another group's kind.
func TestCachedListIsUpstreamsStreamingEncoding(t *testing.T) {
	remaining := int64(3)
	zero := int64(0)
	lease := &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease", ResourceVersion: "9"},
	}
	cases := []struct {
		name    string
		kind    schema.GroupVersionKind
		items   []runtime.Object
		cont    string
		remain  *int64
		newList func([]runtime.Object) runtime.Object
	}{
		{name: "empty", kind: v1.SchemeGroupVersion.WithKind("Pod")},
		{name: "pods", kind: v1.SchemeGroupVersion.WithKind("Pod"), items: []runtime.Object{
			listPod("a", nil),
			listPod("b", map[string]string{"html": `<a href="x">&amp;</a>`, "sep": "line\u2028para", "text": "héllo ✓ \x01\"q\""}),
		}},
		{name: "page", kind: v1.SchemeGroupVersion.WithKind("Pod"), items: []runtime.Object{listPod("a", nil)}, cont: "token", remain: &remaining},
		{name: "last page count", kind: v1.SchemeGroupVersion.WithKind("Pod"), items: []runtime.Object{listPod("a", nil)}, cont: "token", remain: &zero},
		{name: "leases", kind: coordinationv1.SchemeGroupVersion.WithKind("Lease"), items: []runtime.Object{lease}},
	}
	for _, tc := range cases {
		for id, upstream := range upstreamListEncoders(t) {
			t.Run(fmt.Sprintf("%s/%s", tc.name, id), func(t *testing.T) {
				list := &watchcache.CachedList{ResourceVersion: 42, Continue: tc.cont, RemainingItemCount: tc.remain}
				for _, o := range tc.items {
					list.Items = append(list.Items, watchcache.NewCachedObject(o.DeepCopyObject()))
				}
				var got bytes.Buffer
				if err := writeList(&got, id, tc.kind, list); err != nil {
					t.Fatal(err)
				}

				typed := typedList(t, tc.kind, tc.items)
				typed.(metav1.ListInterface).SetResourceVersion("42")
				typed.(metav1.ListInterface).SetContinue(tc.cont)
				typed.(metav1.ListInterface).SetRemainingItemCount(tc.remain)
				var want bytes.Buffer
				if err := upstream.Encode(typed, &want); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("list bytes differ from upstream's:\n got %q\nwant %q", got.Bytes(), want.Bytes())
				}
			})
		}
	}
}

// typedList is the typed list of kind's items, without their kinds, as
// kube-apiserver's list conversion leaves them.
func typedList(t *testing.T, kind schema.GroupVersionKind, items []runtime.Object) runtime.Object {
	t.Helper()
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	list, err := scheme.New(kind.GroupVersion().WithKind(kind.Kind + "List"))
	if err != nil {
		t.Fatal(err)
	}
	bare := make([]runtime.Object, len(items))
	for i, o := range items {
		bare[i] = o.DeepCopyObject()
		bare[i].GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	if err := meta.SetList(list, bare); err != nil {
		t.Fatal(err)
	}
	list.GetObjectKind().SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
	return list
}

// TestCachedListEncodesEachItemOnce writes one list of 1 000 cached pods
// again and again: after the first time the items' bytes come from their
// cache, so a write allocates a few buffers, not anything per item.
func TestCachedListEncodesEachItemOnce(t *testing.T) {
	list := &watchcache.CachedList{ResourceVersion: 42}
	for i := range 1000 {
		list.Items = append(list.Items, watchcache.NewCachedObject(listPod(fmt.Sprintf("p-%04d", i), nil)))
	}
	kind := v1.SchemeGroupVersion.WithKind("Pod")
	for _, id := range []runtime.Identifier{listItemJSON, listItemProtobuf} {
		if err := writeList(io.Discard, id, kind, list); err != nil {
			t.Fatal(err)
		}
		// AllocsPerRun counts the whole process's allocations, and this
		// package's shared server allocates in the background now and
		// then; that only adds, so the least of a few measurements is
		// the writes' own (items encoded again would cost at least one
		// allocation per item in every measurement).
		allocs := math.Inf(1)
		for range 5 {
			allocs = min(allocs, testing.AllocsPerRun(5, func() {
				if err := writeList(io.Discard, id, kind, list); err != nil {
					t.Fatal(err)
				}
			}))
		}
		if allocs > 50 {
			t.Errorf("%s: writing a 1 000-item list from cache allocates %.0f times, want a few (items encoded again?)", id, allocs)
		}
		for _, o := range list.Items {
			if o.Encodings() == 0 {
				t.Fatalf("%s: %s has no cached encoding", id, o.GetName())
			}
		}
	}
}
