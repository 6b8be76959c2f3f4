package apiserver

import (
	"bytes"
	"io"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kite-project/kite/storage/watchcache"
)

// TestJSONWatchFrameIsTheEncodersFrame checks that a JSON watch event
// framed by hand around the object's (cached) bytes is byte for byte what
// the streaming encoder writes for a metav1.WatchEvent, for objects with
// characters encoding/json escapes (HTML, U+2028) and non-ASCII text.
func TestJSONWatchFrameIsTheEncodersFrame(t *testing.T) {
	s := testServer(t)
	info, ok := s.serializerFor(mediaJSON)
	if !ok || info.StreamSerializer == nil {
		t.Fatal("no JSON stream serializer")
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", ResourceVersion: "42",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"html": `<a href="x">&amp;</a>`, "sep": "line\u2028para\u2029end", "text": "héllo ✓ \x01\t\"q\""},
		},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "c", Image: "busybox", Command: []string{"sh", "-c", "echo '<>' && sleep 1"}}}},
	}
	table := &metav1.Table{
		ColumnDefinitions: []metav1.TableColumnDefinition{{Name: "Name", Type: "string"}},
		Rows:              []metav1.TableRow{{Cells: []any{"p<&>", int64(1)}, Object: runtime.RawExtension{Raw: []byte(`{ "kind" : "PartialObjectMetadata", "x":"<" }`)}}},
	}
	table.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Table"))
	pods := s.encoderFor(info.Serializer, v1.SchemeGroupVersion)
	tables := s.encoderFor(info.Serializer, metav1.SchemeGroupVersion)
	cases := []struct {
		name    string
		encoder runtime.Encoder
		obj     runtime.Object
	}{
		{"pod", pods, pod},
		{"cached pod", pods, watchcache.NewCachedObject(pod.DeepCopy())},
		{"table", tables, table},
	}
	for _, tc := range cases {
		for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
			want, _ := encoderFrame(t, info, tc.encoder, tc.obj, typ)

			var got bytes.Buffer
			prefix := jsonEventPrefix(typ)
			got.WriteString(prefix)
			if err := tc.encoder.Encode(tc.obj, &got); err != nil {
				t.Fatal(err)
			}
			finishJSONEvent(&got)
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s %s:\n got %q\nwant %q", tc.name, typ, got.Bytes(), want)
			}
		}
	}
	for _, typ := range []watch.EventType{watch.Bookmark, watch.Error} {
		if p := jsonEventPrefix(typ); p != "" {
			t.Errorf("%s events are framed by hand (%q), want the encoder", typ, p)
		}
	}
}

// BenchmarkJSONWatchFrame is the per-watcher cost of one JSON watch event
// of a watch-cache object (its JSON cached after the first use): through
// the streaming encoder as a metav1.WatchEvent (encoding/json compacts the
// object's bytes again), or framed by hand around them.
func BenchmarkJSONWatchFrame(b *testing.B) {
	scheme, err := NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{scheme: scheme, codecs: serializer.NewCodecFactory(scheme)}
	info, _ := s.serializerFor(mediaJSON)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", ResourceVersion: "12345",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": strings.Repeat("x", 600)}},
		Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
	obj := watchcache.NewCachedObject(pod)
	objects := s.encoderFor(info.Serializer, v1.SchemeGroupVersion)
	var buf bytes.Buffer
	b.Run("encoder", func(b *testing.B) {
		events := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(io.Discard), info.StreamSerializer.Serializer)
		for b.Loop() {
			buf.Reset()
			if err := objects.Encode(obj, &buf); err != nil {
				b.Fatal(err)
			}
			if err := events.Encode(&metav1.WatchEvent{Type: string(watch.Modified), Object: runtime.RawExtension{Raw: buf.Bytes()}}); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(buf.Len()))
	})
	b.Run("by-hand", func(b *testing.B) {
		for b.Loop() {
			buf.Reset()
			buf.WriteString(jsonEventPrefix(watch.Modified))
			if err := objects.Encode(obj, &buf); err != nil {
				b.Fatal(err)
			}
			finishJSONEvent(&buf)
			if _, err := io.Discard.Write(buf.Bytes()); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(buf.Len()))
	})
}

// encoderFrame is the watch frame of an event of type typ for obj as the
// encoders write it: obj through encoder, then a metav1.WatchEvent
// through the streaming encoder of info. It also returns the object's
// bytes.
func encoderFrame(t *testing.T, info runtime.SerializerInfo, encoder runtime.Encoder, obj runtime.Object, typ watch.EventType) (frame, object []byte) {
	t.Helper()
	var o bytes.Buffer
	if err := encoder.Encode(obj, &o); err != nil {
		t.Fatal(err)
	}
	var f bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&f), info.StreamSerializer.Serializer)
	if err := enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: o.Bytes()}}); err != nil {
		t.Fatal(err)
	}
	return f.Bytes(), o.Bytes()
}
