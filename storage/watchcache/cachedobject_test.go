package watchcache

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/storage"
)

// TestCachedObjectEncodesOncePerFormat encodes one object from many
// goroutines with the real JSON and protobuf codecs: each format is
// encoded once, every caller gets the same bytes as a plain encoding.
func TestCachedObjectEncodesOncePerFormat(t *testing.T) {
	pod := &examplev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"a": "b"}},
		Spec:       examplev1.PodSpec{NodeName: "node-1"},
	}
	gv := examplev1.SchemeGroupVersion
	encoders := map[string]runtime.Encoder{
		"json":     codecs.EncoderForVersion(json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{}), gv),
		"protobuf": codecs.EncoderForVersion(protobuf.NewSerializer(scheme, scheme), gv),
	}
	for name, enc := range encoders {
		t.Run(name, func(t *testing.T) {
			var plain bytes.Buffer
			if err := enc.Encode(pod.DeepCopy(), &plain); err != nil {
				t.Fatal(err)
			}
			co := NewCachedObject(pod.DeepCopy())
			var wg sync.WaitGroup
			outs := make([][]byte, 16)
			for i := range outs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var b bytes.Buffer
					if err := enc.Encode(co, &b); err != nil {
						t.Error(err)
					}
					outs[i] = b.Bytes()
				}()
			}
			wg.Wait()
			for i, out := range outs {
				if !bytes.Equal(out, plain.Bytes()) {
					t.Fatalf("caller %d got %q, want %q", i, out, plain.Bytes())
				}
			}
			if n := co.Encodings(); n != 1 {
				t.Fatalf("%d encodings cached, want 1", n)
			}
		})
	}
}

func TestCachedObjectCountsEachIdentifierOnce(t *testing.T) {
	co := NewCachedObject(&examplev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	var calls atomic.Int64
	encode := func(obj runtime.Object, w io.Writer) error {
		calls.Add(1)
		_, err := w.Write([]byte(obj.(*examplev1.Pod).Name))
		return err
	}
	for range 3 {
		for _, id := range []runtime.Identifier{"a", "b"} {
			var b bytes.Buffer
			if err := co.CacheEncode(id, encode, &b); err != nil || b.String() != "p" {
				t.Fatalf("CacheEncode(%s) = %q, %v", id, b.String(), err)
			}
		}
	}
	if calls.Load() != 2 {
		t.Fatalf("encode called %d times for 2 identifiers, want 2", calls.Load())
	}
}

// TestCachedObjectCopiesOnWrite: a setter changes the CachedObject, not the
// object it shares with the cache, and drops stale encodings.
func TestCachedObjectCopiesOnWrite(t *testing.T) {
	shared := &examplev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "1"}}
	co := NewCachedObject(shared)
	encode := func(obj runtime.Object, w io.Writer) error {
		_, err := w.Write([]byte(obj.(*examplev1.Pod).ResourceVersion))
		return err
	}
	var b bytes.Buffer
	_ = co.CacheEncode("id", encode, &b)
	co.SetResourceVersion("2")
	if shared.ResourceVersion != "1" {
		t.Fatal("setter changed the shared object")
	}
	if co.GetResourceVersion() != "2" || co.Encodings() != 0 {
		t.Fatalf("after SetResourceVersion: rv %q, %d encodings", co.GetResourceVersion(), co.Encodings())
	}
	b.Reset()
	_ = co.CacheEncode("id", encode, &b)
	if b.String() != "2" {
		t.Fatalf("re-encoded %q, want 2", b.String())
	}
	if got := co.GetObject().(*examplev1.Pod); got == shared || got.ResourceVersion != "2" {
		t.Fatal("GetObject must return a copy of the current object")
	}
	if gvk := co.GetObjectKind().GroupVersionKind(); gvk != (schema.GroupVersionKind{}) {
		t.Fatalf("unexpected kind %v", gvk)
	}
}

// TestListsAndWatchesShareEncodings: the object a watcher receives and the
// item a list returns are the same CachedObject, so the bytes encoded for
// one are reused by the other.
func TestListsAndWatchesShareEncodings(t *testing.T) {
	ctx, c, _ := testSetup(t)
	start := c.ResourceVersion()
	w := watchFrom(t, ctx, c, start, fieldsEverything(), labelsEverything())
	wr := &writer{c: c}
	wr.apply(ctx, t, "shared", nil, &podState{node: "n"})
	ev := <-w.ResultChan()
	fromWatch, ok := ev.Object.(*CachedObject)
	if !ok {
		t.Fatalf("watch event object is %T, want *CachedObject", ev.Object)
	}
	enc := codecs.EncoderForVersion(json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{}), examplev1.SchemeGroupVersion)
	var first bytes.Buffer
	if err := enc.Encode(fromWatch, &first); err != nil {
		t.Fatal(err)
	}

	list, err := c.ListCached(ctx, podPrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0] != fromWatch {
		t.Fatalf("list items %v do not share the watch event's object", list.Items)
	}
	var second bytes.Buffer
	if err := enc.Encode(list.Items[0], &second); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) || fromWatch.Encodings() != 1 {
		t.Fatalf("list and watch encodings differ or were made twice (%d encodings)", fromWatch.Encodings())
	}

	// GetList returns the same object, typed.
	typed := &example.PodList{}
	if err := c.GetList(ctx, podPrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything}, typed); err != nil {
		t.Fatal(err)
	}
	if len(typed.Items) != 1 || typed.Items[0].Name != "shared" || typed.ResourceVersion != strconv.FormatUint(list.ResourceVersion, 10) {
		t.Fatalf("GetList = %+v, ListCached at %d", typed, list.ResourceVersion)
	}
}
