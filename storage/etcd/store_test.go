package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/storage/etcd/embedded"
	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

func newPod(ns, name string) *example.Pod {
	return &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func podKey(p *example.Pod) string { return "/pods/" + p.Namespace + "/" + p.Name }

func mustCreate(ctx context.Context, t *testing.T, s *Store, p *example.Pod) *example.Pod {
	t.Helper()
	out := &example.Pod{}
	if err := s.Create(ctx, podKey(p), p, out, 0); err != nil {
		t.Fatalf("create %s: %v", podKey(p), err)
	}
	return out
}

// Reads and watches at a revision etcd has compacted away are Expired
// (410), so that clients re-list.
func TestCompactedRevisionIsExpired(t *testing.T) {
	ctx, s, client := testSetup(t)
	first := mustCreate(ctx, t, s, newPod("ns", "a"))
	mustCreate(ctx, t, s, newPod("ns", "b"))
	mustCreate(ctx, t, s, newPod("ns", "c"))

	// A continue token taken before the compaction.
	page := &example.PodList{}
	if err := s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: storage.SelectionPredicate{Limit: 1, Label: storage.Everything.Label, Field: storage.Everything.Field}}, page); err != nil {
		t.Fatalf("first page: %v", err)
	}
	if page.Continue == "" {
		t.Fatalf("first page has no continue token")
	}
	// Compact past the page's revision.
	after := mustCreate(ctx, t, s, newPod("ns", "d"))
	compactStorage(s, client.Client)(ctx, t, after.ResourceVersion)

	tests := []struct {
		name string
		do   func() error
	}{
		{"list at an exact compacted revision", func() error {
			return s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Predicate: storage.Everything}, &example.PodList{})
		}},
		{"list continuing at a compacted revision", func() error {
			pred := storage.Everything
			pred.Limit, pred.Continue = 1, page.Continue
			err := s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: pred}, &example.PodList{})
			// The client may go on, inconsistently, at the latest revision.
			var st apierrors.APIStatus
			if errors.As(err, &st) && st.Status().ListMeta.Continue == "" {
				return fmt.Errorf("expired continue carries no new token: %w", err)
			}
			return err
		}},
		{"watch from a compacted revision", func() error {
			w, err := s.Watch(ctx, "/pods/", storage.ListOptions{Recursive: true, ResourceVersion: first.ResourceVersion, Predicate: storage.Everything})
			if err != nil {
				return err
			}
			defer w.Stop()
			select {
			case ev := <-w.ResultChan():
				if ev.Type != watch.Error {
					return fmt.Errorf("got %s event, want ERROR", ev.Type)
				}
				return apierrors.FromObject(ev.Object)
			case <-time.After(30 * time.Second):
				return errors.New("no event within 30s")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if !apierrors.IsResourceExpired(err) {
				t.Fatalf("got %v, want Expired (410)", err)
			}
			if code := apierrors.ReasonForError(err); code != metav1.StatusReasonExpired {
				t.Errorf("reason %q, want %q", code, metav1.StatusReasonExpired)
			}
		})
	}
}

// A revision past etcd's current one is TooLargeResourceVersion (504 with
// a retry hint), for reads and for watches that send the initial state.
func TestFutureRevisionIsTooLarge(t *testing.T) {
	ctx, s, _ := testSetup(t)
	p := mustCreate(ctx, t, s, newPod("ns", "a"))
	rv, _ := strconv.ParseUint(p.ResourceVersion, 10, 64)
	future := strconv.FormatUint(rv+100, 10)

	tests := []struct {
		name string
		do   func() error
	}{
		{"get not older than", func() error {
			return s.Get(ctx, podKey(p), storage.GetOptions{ResourceVersion: future}, &example.Pod{})
		}},
		{"list not older than", func() error {
			return s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, ResourceVersion: future, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Predicate: storage.Everything}, &example.PodList{})
		}},
		{"list exact", func() error {
			return s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, ResourceVersion: future, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Predicate: storage.Everything}, &example.PodList{})
		}},
		{"watch with initial events", func() error {
			w, err := s.Watch(ctx, "/pods/", storage.ListOptions{Recursive: true, ResourceVersion: future, SendInitialEvents: ptr.To(true), Predicate: storage.Everything})
			if err != nil {
				return err
			}
			defer w.Stop()
			ev := <-w.ResultChan()
			if ev.Type != watch.Error {
				return fmt.Errorf("got %s event, want ERROR", ev.Type)
			}
			return apierrors.FromObject(ev.Object)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if !storage.IsTooLargeResourceVersion(err) {
				t.Fatalf("got %v, want TooLargeResourceVersion", err)
			}
		})
	}
}

// A value that does not decode is reported as a CorruptObj error naming
// its key by every read, and ends a watch with an ERROR; nothing panics.
func TestCorruptValueNamesKey(t *testing.T) {
	ctx, s, client := testSetup(t, withUnsafeCorruptObjectDeletion())
	good := mustCreate(ctx, t, s, newPod("ns", "good"))
	const key = "/pods/ns/bad"
	// The transformer's prefix is right, the object bytes are garbage.
	if _, err := client.Client.KV.Put(ctx, key, defaultTestPrefix+"\x00\xffnot an object"); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		do   func() error
	}{
		{"get", func() error { return s.Get(ctx, key, storage.GetOptions{}, &example.Pod{}) }},
		{"list", func() error {
			list := &example.PodList{}
			err := s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list)
			// The good object still comes, the corrupt one is a cause of
			// the list's StoreReadError.
			if len(list.Items) != 1 || list.Items[0].Name != good.Name {
				return fmt.Errorf("list items %v, want only %s", list.Items, good.Name)
			}
			var st apierrors.APIStatus
			if !errors.As(err, &st) || st.Status().Reason != metav1.StatusReasonStoreReadError || len(st.Status().Details.Causes) != 1 {
				return fmt.Errorf("list error %v is not a StoreReadError with one cause", err)
			}
			if cause := st.Status().Details.Causes[0]; cause.Field != key {
				return fmt.Errorf("list error cause names %q, want %q", cause.Field, key)
			}
			return storage.NewCorruptObjError(key, err)
		}},
		{"update", func() error {
			return s.GuaranteedUpdate(ctx, key, &example.Pod{}, false, nil, storage.SimpleUpdate(func(o runtime.Object) (runtime.Object, error) { return o, nil }), nil)
		}},
		{"delete", func() error {
			return s.Delete(ctx, key, &example.Pod{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if !storage.IsCorruptObject(err) {
				t.Fatalf("got %v, want a CorruptObj storage error", err)
			}
			if !strings.Contains(err.Error(), key) {
				t.Errorf("error %q does not name the key %q", err, key)
			}
		})
	}

	t.Run("watch", func(t *testing.T) {
		w, err := s.Watch(ctx, "/pods/", storage.ListOptions{Recursive: true, ResourceVersion: good.ResourceVersion, Predicate: storage.Everything})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ev := <-w.ResultChan()
		if ev.Type != watch.Error {
			t.Fatalf("got %s event, want ERROR", ev.Type)
		}
		if msg := apierrors.FromObject(ev.Object).Error(); !strings.Contains(msg, key) {
			t.Errorf("watch error %q does not name the key %q", msg, key)
		}
		if _, open := <-w.ResultChan(); open {
			t.Errorf("watch delivered more after its ERROR")
		}
	})

	t.Run("unsafe delete of the corrupt value", func(t *testing.T) {
		err := s.Delete(ctx, key, &example.Pod{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{ExpectTransformOrDecodeError: true})
		if err != nil {
			t.Fatalf("delete: %v", err)
		}
		if err := s.Get(ctx, key, storage.GetOptions{}, &example.Pod{}); !storage.IsNotFound(err) {
			t.Fatalf("after delete got %v, want NotFound", err)
		}
	})
}

// 50 goroutines incrementing one counter with GuaranteedUpdate lose no
// increment: conflicts are retried on the current value.
func TestConcurrentGuaranteedUpdateLosesNoUpdate(t *testing.T) {
	ctx, s, _ := testSetup(t)
	p := mustCreate(ctx, t, s, newPod("ns", "counter"))
	const workers, perWorker = 50, 4

	increment := storage.SimpleUpdate(func(o runtime.Object) (runtime.Object, error) {
		pod := o.(*example.Pod)
		n, _ := strconv.Atoi(pod.Annotations["count"])
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations["count"] = strconv.Itoa(n + 1)
		return pod, nil
	})
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range perWorker {
				if err := s.GuaranteedUpdate(ctx, podKey(p), &example.Pod{}, false, nil, increment, nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("update: %v", err)
	}
	got := &example.Pod{}
	if err := s.Get(ctx, podKey(p), storage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(workers * perWorker); got.Annotations["count"] != want {
		t.Fatalf("count = %s, want %s", got.Annotations["count"], want)
	}
}

// Objects survive a restart of etcd on the same data directory, with their
// resourceVersions.
func TestRestartKeepsObjects(t *testing.T) {
	dir := t.TempDir()
	start := func() (*Store, func()) {
		srv, err := embedded.Start(context.Background(), embedded.Options{DataDir: dir, UnsafeNoFsync: true, LogLevel: "fatal"})
		if err != nil {
			t.Fatalf("start etcd: %v", err)
		}
		c, err := srv.Client()
		if err != nil {
			srv.Close()
			t.Fatalf("etcd client: %v", err)
		}
		s, err := New(Options{
			Client:         NewClient(c),
			Codec:          codecs.LegacyCodec(examplev1.SchemeGroupVersion),
			NewFunc:        func() runtime.Object { return &example.Pod{} },
			NewListFunc:    func() runtime.Object { return &example.PodList{} },
			Prefix:         "/registry",
			ResourcePrefix: "/pods",
		})
		if err != nil {
			t.Fatal(err)
		}
		return s, func() { c.Close(); srv.Close() }
	}
	ctx := context.Background()

	s, stop := start()
	created := mustCreate(ctx, t, s, newPod("ns", "a"))
	stop()

	s, stop = start()
	defer stop()
	got := &example.Pod{}
	if err := s.Get(ctx, podKey(created), storage.GetOptions{}, got); err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	if got.Name != created.Name || got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("after restart got %s rv %s, want %s rv %s", got.Name, got.ResourceVersion, created.Name, created.ResourceVersion)
	}
}

// With the protobuf serializer the stored value starts with "k8s\x00", as
// kube-apiserver stores it, under <prefix>/<resource>/<namespace>/<name>.
func TestProtobufValuesUnderRegistryPrefix(t *testing.T) {
	_, _, client := testSetup(t)
	pb := protobuf.NewSerializer(nil, nil)
	codec := codecs.CodecForVersions(pb, codecs.UniversalDeserializer(), examplev1.SchemeGroupVersion, nil)
	s, err := New(Options{
		Client:         client,
		Codec:          codec,
		NewFunc:        func() runtime.Object { return &example.Pod{} },
		NewListFunc:    func() runtime.Object { return &example.PodList{} },
		Prefix:         "/registry",
		ResourcePrefix: "/pods",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	created := mustCreate(ctx, t, s, newPod("ns", "a"))
	resp, err := client.Client.KV.Get(ctx, "/registry/pods/ns/a")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read raw value: %v (%d kvs)", err, len(resp.Kvs))
	}
	if v := resp.Kvs[0].Value; !strings.HasPrefix(string(v), "k8s\x00") {
		t.Fatalf("value starts with %q, want the protobuf magic k8s\\x00", v[:min(len(v), 8)])
	}
	list := &example.PodList{}
	if err := s.GetList(ctx, "/pods", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].ResourceVersion != created.ResourceVersion {
		t.Fatalf("list = %+v, want the one pod at rv %s", list.Items, created.ResourceVersion)
	}
}

// Lists of unstructured objects (custom resources) decode each item as an
// Unstructured keeping the list's apiVersion.
func TestUnstructuredList(t *testing.T) {
	_, _, client := testSetup(t)
	s, err := New(Options{
		Client:         client,
		Codec:          unstructured.UnstructuredJSONScheme,
		NewFunc:        func() runtime.Object { return &unstructured.Unstructured{} },
		NewListFunc:    func() runtime.Object { return &unstructured.UnstructuredList{} },
		Prefix:         "/registry",
		ResourcePrefix: "/example.com/widgets",
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("example.com/v1")
		obj.SetKind("Widget")
		obj.SetNamespace("ns")
		obj.SetName(name)
		if err := s.Create(ctx, "/example.com/widgets/ns/"+name, obj, &unstructured.Unstructured{}, 0); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("example.com/v1")
	if err := s.GetList(ctx, "/example.com/widgets/ns", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("got %d items, want 2", len(list.Items))
	}
	for i, want := range []string{"a", "b"} {
		item := list.Items[i]
		if item.GetName() != want || item.GetAPIVersion() != "example.com/v1" || item.GetResourceVersion() == "" {
			t.Errorf("item %d = %s %s rv %q, want %s example.com/v1 with an rv", i, item.GetName(), item.GetAPIVersion(), item.GetResourceVersion(), want)
		}
	}
}

// RequestWatchProgress makes etcd send a progress notification, which a
// watch opened with ProgressNotify delivers as a BOOKMARK, even though
// etcd's periodic notifications (every 10 minutes) are far away.
func TestRequestWatchProgressSendsBookmark(t *testing.T) {
	ctx, s, client := testSetup(t)
	p := mustCreate(ctx, t, s, newPod("ns", "a"))
	// Move etcd past the watch's start: etcd sends no progress for a watch
	// on a future revision.
	current := etcdtest.IncreaseRV(client.Client)(ctx, t)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.Watch(wctx, "/pods/", storage.ListOptions{Recursive: true, ResourceVersion: p.ResourceVersion, ProgressNotify: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// The watch may not be registered with etcd yet when we ask: ask again
	// until the bookmark comes.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Bookmark {
				t.Fatalf("got %s event, want BOOKMARK", ev.Type)
			}
			rv, _ := strconv.ParseInt(ev.Object.(*example.Pod).ResourceVersion, 10, 64)
			if rv < current {
				t.Fatalf("bookmark at %d, want at least %d", rv, current)
			}
			return
		case <-tick.C:
			if err := s.RequestWatchProgress(wctx); err != nil {
				t.Fatalf("RequestWatchProgress: %v", err)
			}
		case <-deadline:
			t.Fatal("no bookmark within 30s")
		}
	}
}

// GetCurrentResourceVersion is etcd's current revision, whatever resource
// the last write was for.
func TestGetCurrentResourceVersion(t *testing.T) {
	ctx, s, client := testSetup(t)
	p := mustCreate(ctx, t, s, newPod("ns", "a"))
	rv, err := s.GetCurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := strconv.ParseUint(p.ResourceVersion, 10, 64); rv != want {
		t.Fatalf("after a create: %d, want the create's %d", rv, want)
	}
	other := etcdtest.IncreaseRV(client.Client)(ctx, t)
	if rv, err = s.GetCurrentResourceVersion(ctx); err != nil || rv != uint64(other) {
		t.Fatalf("after a write elsewhere: %d, %v; want %d", rv, err, other)
	}
}

// A watch's initial state spanning several etcd pages arrives whole, in
// key order, read at one revision, followed by the initial-events-end
// bookmark and then by changes.
func TestWatchInitialStateAcrossPages(t *testing.T) {
	ctx, s, _ := testSetup(t)
	s.watchPageSize = 2
	var names []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		mustCreate(ctx, t, s, newPod("ns", name))
		names = append(names, name)
	}
	pred := storage.Everything
	pred.AllowWatchBookmarks = true
	w, err := s.Watch(ctx, "/pods/ns", storage.ListOptions{Recursive: true, SendInitialEvents: ptr.To(true), Predicate: pred})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	next := func() watch.Event {
		t.Helper()
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			return ev
		case <-time.After(30 * time.Second):
			t.Fatal("no event within 30s")
		}
		return watch.Event{}
	}
	for _, name := range names {
		if ev := next(); ev.Type != watch.Added || ev.Object.(*example.Pod).Name != name {
			t.Fatalf("got %s %v, want ADDED %s", ev.Type, ev.Object, name)
		}
	}
	if ev := next(); ev.Type != watch.Bookmark {
		t.Fatalf("got %s, want the initial-events-end BOOKMARK", ev.Type)
	} else if ok, _ := storage.HasInitialEventsEndBookmarkAnnotation(ev.Object); !ok {
		t.Fatalf("bookmark lacks the initial-events-end annotation")
	}
	mustCreate(ctx, t, s, newPod("ns", "f"))
	if ev := next(); ev.Type != watch.Added || ev.Object.(*example.Pod).Name != "f" {
		t.Fatalf("got %s %v, want ADDED f", ev.Type, ev.Object)
	}
}
