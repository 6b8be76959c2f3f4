package apiserver

import (
	"bytes"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kite-project/kite/storage/watchcache"
)

// TestCachedFramesAreTheEncodersFrames checks that a watch frame made
// around an object's cached list bytes is byte for byte what the
// versioning encoder and the streaming watch encoder write for the same
// event, in JSON and protobuf, for every event type that carries an
// object, for objects with characters JSON escapes and of another group.
func TestCachedFramesAreTheEncodersFrames(t *testing.T) {
	s := testServer(t)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease", ResourceVersion: "9"}}
	objects := []runtime.Object{
		listPod("plain", nil),
		listPod("escaped", map[string]string{"html": `<a href="x">&amp;</a>`, "sep": "line\u2028para", "text": "héllo ✓ \x01\"q\""}),
		lease,
	}
	for _, mediaType := range []string{mediaJSON, mediaProtobuf} {
		info, ok := s.serializerFor(mediaType)
		if !ok || info.StreamSerializer == nil {
			t.Fatalf("no stream serializer for %s", mediaType)
		}
		for _, obj := range objects {
			kind := v1.SchemeGroupVersion.WithKind("Pod")
			if _, isLease := obj.(*coordinationv1.Lease); isLease {
				kind = coordinationv1.SchemeGroupVersion.WithKind("Lease")
			}
			frames, err := newCachedFrames(mediaType == mediaProtobuf, kind)
			if err != nil {
				t.Fatal(err)
			}
			encoder := s.encoderFor(info.Serializer, kind.GroupVersion())
			for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
				name := mediaType + "/" + kind.Kind + "/" + obj.(metav1.Object).GetName() + "/" + string(typ)
				// Separate objects: the encoder's encoding must not be the
				// frames' source.
				want, object := encoderFrame(t, info, encoder, watchcache.NewCachedObject(obj.DeepCopyObject()), typ)

				var got bytes.Buffer
				size, err := frames.appendEvent(&got, typ, watchcache.NewCachedObject(obj.DeepCopyObject()))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Errorf("%s:\n got %q\nwant %q", name, got.Bytes(), want)
				}
				if wantSize := len(bytes.TrimSuffix(object, []byte("\n"))); size != wantSize {
					t.Errorf("%s: object size %d, want %d", name, size, wantSize)
				}
			}
		}
	}
}
