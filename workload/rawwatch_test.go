package workload

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
)

var mediaTypes = []string{"application/json", "application/vnd.kubernetes.protobuf"}

// encodeWatch is a watch response body of the events, as an API server
// writes it: each object encoded as v1, wrapped in a metav1.WatchEvent and
// framed by the media type's stream serializer.
func encodeWatch(t testing.TB, mediaType string, events ...watch.Event) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
	if !ok || info.StreamSerializer == nil {
		t.Fatalf("no stream serializer for %s", mediaType)
	}
	objects := scheme.Codecs.EncoderForVersion(info.Serializer, v1.SchemeGroupVersion)
	var body bytes.Buffer
	frames := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&body), info.StreamSerializer.Serializer)
	for _, ev := range events {
		raw, err := runtime.Encode(objects, ev.Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := frames.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			t.Fatal(err)
		}
	}
	return body.Bytes()
}

// readAll reads events from body until an error, and returns both.
func readAll(body []byte) ([]event, error) {
	s := newRawStream(io.NopCloser(bytes.NewReader(body)))
	defer s.stop()
	var got []event
	for {
		ev, err := s.next()
		if err != nil {
			return got, err
		}
		got = append(got, ev)
	}
}

// TestRawStreamReadsWhatTheWatcherNeeds encodes pods whose metadata holds
// everything that could fool a byte search (quotes, backslashes, unicode,
// HTML characters that encoding/json escapes, "namespace" and "metadata"
// inside values, keys that end like the sent annotation's) with the real
// serializers and stream framers, and checks that the raw reader gets the
// event type, namespace, resourceVersion and sent annotation exactly, in
// JSON and in protobuf.
func TestRawStreamReadsWhatTheWatcherNeeds(t *testing.T) {
	pod := func(ns, rv string, annotations map[string]string) *v1.Pod {
		p := (Options{Namespace: ns, Nodes: 3}).newPod(7)
		p.ResourceVersion = rv
		p.Annotations = annotations
		return p
	}
	tricky := pod("ns-1", "1234", map[string]string{
		`quote"key`:             `a "quoted" value`,
		`back\slash`:            `C:\path\ and \" and \\`,
		"unicode":               "héllo ☃ 😀 \u2028 \x01",
		"html":                  `<script>&</script>`,
		"x.bench.kite.io/sent":  "999",
		"bench.kite.io/sent-no": "998",
		"looks-like-meta":       `"metadata":{"namespace":"evil","resourceVersion":"1"}`,
		sentAnnotation:          "1700000000000000001",
	})
	tricky.Labels["fake"] = `"namespace":"evil"`
	tricky.GenerateName = `gen"namespace"`
	tricky.Finalizers = []string{"kite.io/f"}
	tricky.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n", UID: "u"}}
	tricky.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kite", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:bench.kite.io/sent":{}}}}`)}}}

	bookmark := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "2000", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	for _, tt := range []struct {
		name string
		ev   watch.Event
		want event
	}{
		{"an update", watch.Event{Type: watch.Modified, Object: pod("bench", "42", map[string]string{sentAnnotation: "17"})},
			event{typ: watch.Modified, namespace: "bench", rv: "42", sent: "17"}},
		{"escapes and look-alikes around the sent annotation", watch.Event{Type: watch.Modified, Object: tricky},
			event{typ: watch.Modified, namespace: "ns-1", rv: "1234", sent: "1700000000000000001"}},
		{"a sent annotation with escapes", watch.Event{Type: watch.Modified, Object: pod("b", "5", map[string]string{sentAnnotation: "1\"2\\3☃"})},
			event{typ: watch.Modified, namespace: "b", rv: "5", sent: "1\"2\\3☃"}},
		{"no annotations", watch.Event{Type: watch.Added, Object: pod("bench", "43", nil)},
			event{typ: watch.Added, namespace: "bench", rv: "43"}},
		{"other annotations only", watch.Event{Type: watch.Deleted, Object: pod("bench", "44", map[string]string{"a": "b"})},
			event{typ: watch.Deleted, namespace: "bench", rv: "44"}},
		{"a bookmark", watch.Event{Type: watch.Bookmark, Object: bookmark},
			event{typ: watch.Bookmark, rv: "2000"}},
	} {
		for _, mediaType := range mediaTypes {
			t.Run(tt.name+"/"+mediaType, func(t *testing.T) {
				got, err := readAll(encodeWatch(t, mediaType, tt.ev, tt.ev))
				if !errors.Is(err, io.EOF) {
					t.Fatalf("stream ended with %v, want io.EOF", err)
				}
				if len(got) != 2 || got[0] != tt.want || got[1] != tt.want {
					t.Fatalf("got %+v, want %+v twice", got, tt.want)
				}
			})
		}
	}
}

// TestRawStreamEndsWithTheErrorEventsStatus checks that an ERROR event
// ends the stream with its Status as the error, as client-go's watch
// hands it over, so that a 410 is recognisable.
func TestRawStreamEndsWithTheErrorEventsStatus(t *testing.T) {
	update := watch.Event{Type: watch.Modified, Object: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", ResourceVersion: "3"}}}
	expired := watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired("too old resource version: 3 (9)").ErrStatus}
	for _, mediaType := range mediaTypes {
		t.Run(mediaType, func(t *testing.T) {
			got, err := readAll(encodeWatch(t, mediaType, update, expired, update))
			if len(got) != 1 || got[0].rv != "3" {
				t.Errorf("events before the error: %+v, want the update at 3", got)
			}
			if !apierrors.IsResourceExpired(err) || apierrors.ReasonForError(err) != metav1.StatusReasonExpired {
				t.Errorf("stream ended with %v, want the 410 Expired Status", err)
			}
		})
	}
}

// TestRawJSONInAnyMemberOrder checks JSON written by hand in orders and
// spacing no server of ours uses: object before type, annotations before
// namespace, escaped names, white space.
func TestRawJSONInAnyMemberOrder(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		want       event
	}{
		{"object before type", `{"object":{"kind":"Pod","metadata":{"namespace":"a","resourceVersion":"7","annotations":{"bench.kite.io/sent":"9"}}},"type":"MODIFIED"}`,
			event{typ: watch.Modified, namespace: "a", rv: "7", sent: "9"}},
		{"metadata after spec, annotations first", `{"type":"ADDED","object":{"spec":{"x":[1,{"y":"}"}]},"metadata":{"annotations":{"z":"\"","bench.kite.io/sent":"1"},"resourceVersion":"8","namespace":"b"}}}`,
			event{typ: watch.Added, namespace: "b", rv: "8", sent: "1"}},
		{"escaped names and values", `{"type":"MODIFIED","object":{"metadata":{"n\u0061mespace":"c\u00e9","resourceVersion":"9","annotations":{"bench.kite.io\/sent":"\ud83d\ude00"}}}}`,
			event{typ: watch.Modified, namespace: "cé", rv: "9", sent: "😀"}},
		{"white space and null annotations", "{ \"type\" : \"DELETED\" ,\t\"object\" : { \"metadata\" : { \"annotations\" : null , \"namespace\" : \"d\" , \"resourceVersion\" : \"10\" } } }",
			event{typ: watch.Deleted, namespace: "d", rv: "10"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll([]byte(tt.line + "\n"))
			if !errors.Is(err, io.EOF) || len(got) != 1 || got[0] != tt.want {
				t.Fatalf("got %+v, %v; want %+v then io.EOF", got, err, tt.want)
			}
		})
	}
}

// TestRawStreamRefusesMalformedEvents checks that what no server should
// send ends the stream with an errMalformed, never a panic or a
// half-read event.
func TestRawStreamRefusesMalformedEvents(t *testing.T) {
	good := func(mediaType string) []byte {
		return encodeWatch(t, mediaType, watch.Event{Type: watch.Modified, Object: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", ResourceVersion: "3"}}})
	}
	// frame is a protobuf frame around msg.
	frame := func(msg []byte) []byte { return append([]byte{0, 0, 0, byte(len(msg))}, msg...) }
	// event is a protobuf WatchEvent of type typ and object raw.
	event := func(typ string, raw []byte) []byte {
		ev, err := (&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	unknown := func(raw []byte) []byte {
		u, err := (&runtime.Unknown{Raw: raw}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte("k8s\x00"), u...)
	}
	for _, tt := range []struct {
		name string
		body []byte
	}{
		{"JSON without an object", []byte(`{"type":"MODIFIED"}` + "\n")},
		{"JSON without a type", []byte(`{"object":{"metadata":{}}}` + "\n")},
		{"JSON object without metadata", []byte(`{"type":"MODIFIED","object":{"spec":{}}}` + "\n")},
		{"JSON object that is an array", []byte(`{"type":"MODIFIED","object":[1,2]}` + "\n")},
		{"JSON namespace that is a number", []byte(`{"type":"MODIFIED","object":{"metadata":{"namespace":5}}}` + "\n")},
		{"JSON annotations that are a string", []byte(`{"type":"MODIFIED","object":{"metadata":{"annotations":"x"}}}` + "\n")},
		{"JSON type not a string", []byte(`{"type":MODIFIED,"object":{}}` + "\n")},
		{"JSON bad escape", []byte(`{"type":"MODIFIED","object":{"metadata":{"annotations":{"bench.kite.io/sent":"\x"}}}}` + "\n")},
		{"JSON unterminated string", []byte(`{"type":"MODIFIED","object":{"metadata":{"namespace":"a}}}` + "\n")},
		{"JSON ERROR with a bad Status", []byte(`{"type":"ERROR","object":{"code":"x"}}` + "\n")},
		{"JSON empty line after an event", append(good("application/json"), '\n')},
		{"JSON event cut short at the end", bytes.TrimSuffix(good("application/json"), []byte("\n"))},
		{"neither JSON nor protobuf", []byte("not json\n")},
		{"protobuf frame of garbage", frame([]byte{0xff, 0xff, 0xff})},
		{"protobuf frame longer than the limit", append(good("application/vnd.kubernetes.protobuf"), 0x7f, 0xff, 0xff, 0xff)},
		{"protobuf length cut short", append(good("application/vnd.kubernetes.protobuf"), 0, 0)},
		{"protobuf event without a type", frame(event("", unknown(nil)))},
		{"protobuf event without an object", frame([]byte{0x0a, 1, 'M'})},
		{"protobuf object without the magic", frame(event("MODIFIED", []byte("k9s\x00")))},
		{"protobuf object without metadata", frame(event("MODIFIED", unknown(nil)))},
		{"protobuf metadata of garbage", frame(event("MODIFIED", unknown([]byte{0x0a, 2, 0xff, 0xff})))},
		{"protobuf ERROR with a bad Status", frame(event("ERROR", unknown([]byte{0xff})))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAll(tt.body)
			if !errors.Is(err, errMalformed) {
				t.Fatalf("stream ended with %v, want an errMalformed", err)
			}
		})
	}
}

// TestRawStreamCutAnywhere cuts a stream of two events at every byte:
// whatever is cut short is an errMalformed, a cut between events
// ends the stream cleanly after the events before it.
func TestRawStreamCutAnywhere(t *testing.T) {
	a := watch.Event{Type: watch.Modified, Object: (Options{Namespace: "a", Nodes: 1}).newPod(1)}
	b := watch.Event{Type: watch.Bookmark, Object: &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5"}}}
	for _, mediaType := range mediaTypes {
		t.Run(mediaType, func(t *testing.T) {
			first := len(encodeWatch(t, mediaType, a))
			body := encodeWatch(t, mediaType, a, b)
			for cut := range len(body) + 1 {
				got, err := readAll(body[:cut])
				wantEvents := map[int]int{0: 0, first: 1, len(body): 2}
				if n, clean := wantEvents[cut]; clean {
					if !errors.Is(err, io.EOF) || len(got) != n {
						t.Fatalf("cut at %d of %d: %d events, %v; want %d then io.EOF", cut, len(body), len(got), err, n)
					}
					continue
				}
				if !errors.Is(err, errMalformed) {
					t.Fatalf("cut at %d of %d: %v, want an errMalformed", cut, len(body), err)
				}
			}
		})
	}
}

// endless is a watch body that never ends: its frames over and over.
type endless struct {
	b []byte
	i int
}

func (e *endless) Read(p []byte) (int, error) {
	n := copy(p, e.b[e.i:])
	e.i = (e.i + n) % len(e.b)
	return n, nil
}

func (e *endless) Close() error { return nil }

// BenchmarkWatchEventDecode is the client's cost of one fan-out update
// event (a bench pod with its sent annotation and managedFields) in each
// decode mode and format: the raw reader against client-go's watch
// decoder, as its typed watch uses it.
func BenchmarkWatchEventDecode(b *testing.B) {
	p := (Options{Namespace: "bench", Nodes: 100}).newPod(42)
	p.ResourceVersion = "123456"
	p.Annotations = map[string]string{sentAnnotation: "1700000000000000001"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kite", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:bench.kite.io/sent":{}}}}`)}}}
	for _, mediaType := range mediaTypes {
		body := encodeWatch(b, mediaType, watch.Event{Type: watch.Modified, Object: p})
		b.Run("raw/"+mediaType, func(b *testing.B) {
			s := newRawStream(&endless{b: body})
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if ev, err := s.next(); err != nil || ev.sent == "" {
					b.Fatal(ev, err)
				}
			}
		})
		b.Run("client-go/"+mediaType, func(b *testing.B) {
			negotiator := runtime.NewClientNegotiator(scheme.Codecs.WithoutConversion(), v1.SchemeGroupVersion)
			objects, stream, framer, err := negotiator.StreamDecoder(mediaType, nil)
			if err != nil {
				b.Fatal(err)
			}
			d := restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(&endless{b: body}), stream), objects)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, obj, err := d.Decode(); err != nil || obj.(*v1.Pod).Annotations[sentAnnotation] == "" {
					b.Fatal(obj, err)
				}
			}
		})
	}
}

// FuzzRawStream feeds the raw reader any bytes: it must end with io.EOF,
// an errMalformed or an ERROR event's Status, and never panic.
func FuzzRawStream(f *testing.F) {
	pod := (Options{Namespace: "bench", Nodes: 1}).newPod(0)
	pod.Annotations = map[string]string{sentAnnotation: `1"\☃`}
	for _, mediaType := range mediaTypes {
		f.Add(encodeWatch(f, mediaType,
			watch.Event{Type: watch.Modified, Object: pod},
			watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired("gone").ErrStatus}))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, err := readAll(body)
		var status apierrors.APIStatus
		if !errors.Is(err, io.EOF) && !errors.Is(err, errMalformed) && !errors.As(err, &status) {
			t.Fatalf("stream ended with %v (%T)", err, err)
		}
	})
}

// TestRawWatchSendsClientGosRequest opens a typed client-go watch and then
// raw watches through the same client against an HTTP server that records
// the requests and answers in the format asked for: the raw watches must
// send the same path, query and Accept header (for every configured
// content type, and none), read the event, and not wait for the client's
// rate limiter (a burst of one, then a token every 11 days), as client-go's
// Watch does not.
func TestRawWatchSendsClientGosRequest(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", ResourceVersion: "11", Annotations: map[string]string{sentAnnotation: "5"}}}
	want := event{typ: watch.Modified, namespace: "a", rv: "11", sent: "5"}
	for _, contentType := range []string{"", "application/json", "application/vnd.kubernetes.protobuf"} {
		t.Run("contentType="+contentType, func(t *testing.T) {
			var mu sync.Mutex
			var requests []*http.Request
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				requests = append(requests, r)
				mu.Unlock()
				mediaType, streamType := "application/json", "application/json"
				if strings.HasPrefix(r.Header.Get("Accept"), "application/vnd.kubernetes.protobuf") {
					mediaType, streamType = "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf;stream=watch"
				}
				w.Header().Set("Content-Type", streamType)
				w.Write(encodeWatch(t, mediaType, watch.Event{Type: watch.Modified, Object: pod}))
			}))
			defer srv.Close()
			client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: contentType}, QPS: 1e-6, Burst: 1})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard: a throttled open would wait for days
			defer cancel()
			lo := metav1.ListOptions{ResourceVersion: "10", AllowWatchBookmarks: true, FieldSelector: "spec.nodeName=n1"}
			raw := rawWatches{rest: client.CoreV1().RESTClient(), resource: "pods", protobuf: true}
			for i, watches := range []watchOpener{typedWatches{client.CoreV1().Pods(metav1.NamespaceAll)}, raw, raw} {
				s, err := watches.open(ctx, lo)
				if err != nil {
					t.Fatalf("open %d: %v", i, err)
				}
				ev, err := s.next()
				s.stop()
				if err != nil || ev != want {
					t.Fatalf("watch %d: %+v, %v; want %+v", i, ev, err, want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			typed := requests[0]
			for _, r := range requests[1:] {
				if r.URL.RequestURI() != typed.URL.RequestURI() || r.Header.Get("Accept") != typed.Header.Get("Accept") {
					t.Errorf("raw watch sent %s, Accept %q; client-go sent %s, Accept %q",
						r.URL.RequestURI(), r.Header.Get("Accept"), typed.URL.RequestURI(), typed.Header.Get("Accept"))
				}
			}
			t.Logf("%s, Accept %q", typed.URL.RequestURI(), typed.Header.Get("Accept"))
		})
	}
}
