package watchcache

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.kite.io", Version: "v1", Kind: "Widget"}

// withUnstructured makes the resource unstructured widgets stored as JSON,
// as a custom resource is, with spec.color selectable.
func withUnstructured(o *setupOptions) {
	o.codec = unstructured.UnstructuredJSONScheme
	o.newFunc = func() runtime.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(widgetGVK)
		return u
	}
	o.newListFunc = func() runtime.Object {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(widgetGVK.GroupVersion().WithKind("WidgetList"))
		return l
	}
	o.attrFunc = func(obj runtime.Object) (labels.Set, fields.Set, error) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, nil, err
		}
		set := fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
		if c, ok := obj.(interface{ UnstructuredContent() map[string]any }); ok {
			set["spec.color"], _, _ = unstructured.NestedString(c.UnstructuredContent(), "spec", "color")
		}
		return labels.Set(m.GetLabels()), set, nil
	}
}

func newWidget(name, color string) *unstructured.Unstructured {
	fieldSet := metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:color":{},"f:replicas":{}}}`)}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.kite.io/v1",
		"kind":       "Widget",
		"metadata": map[string]any{
			"namespace": "ns",
			"name":      name,
			"labels":    map[string]any{"app": "web"},
		},
		"spec": map[string]any{
			"color":    color,
			"replicas": int64(3),
			"ratio":    1.5,
			"enabled":  true,
			"tags":     []any{"a", "b"},
			"nested":   map[string]any{"x": map[string]any{"y": "z"}},
			"empty":    nil,
		},
	}}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: "test", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "example.kite.io/v1",
		Time: &metav1.Time{Time: time.Date(2026, 12, 2, 3, 4, 5, 0, time.UTC)}, FieldsType: "FieldsV1", FieldsV1: &fieldSet,
	}})
	return u
}

func TestUnstructuredObjectsAreCachedAsJSONAndReadBackUnchanged(t *testing.T) {
	ctx, c, env := testSetup(t, withUnstructured)
	colors := []string{"red", "blue", "red"}
	var created []*unstructured.Unstructured
	for i, color := range colors {
		out := &unstructured.Unstructured{}
		w := newWidget(fmt.Sprintf("w%d", i), color)
		if err := c.Create(ctx, podKey(w.GetName()), w, out, 0); err != nil {
			t.Fatal(err)
		}
		created = append(created, out)
	}
	last := created[len(created)-1].GetResourceVersion()
	if err := c.waitFresh(ctx, mustParseRV(t, last)); err != nil {
		t.Fatal(err)
	}

	// Kept as JSON, with the metadata shared as for typed objects.
	c.mu.RLock()
	var kept []*jsonObject
	for _, w := range created {
		e := c.st.tree.Get(podPrefix + "ns/" + w.GetName())
		if e == nil {
			t.Fatalf("%s not cached", w.GetName())
		}
		j, ok := e.obj.orig.(*jsonObject)
		if !ok {
			t.Fatalf("%s cached as %T, want *jsonObject", w.GetName(), e.obj.orig)
		}
		kept = append(kept, j)
	}
	c.mu.RUnlock()
	ptr := func(m map[string]string) uintptr { return uintptr(reflect.ValueOf(m).UnsafePointer()) }
	for _, j := range kept[1:] {
		if ptr(j.Labels) != ptr(kept[0].Labels) {
			t.Errorf("%s: labels not shared", j.Name)
		}
		if &j.ManagedFields[0].FieldsV1.Raw[0] != &kept[0].ManagedFields[0].FieldsV1.Raw[0] {
			t.Errorf("%s: managedFields' field set not shared", j.Name)
		}
		if bytes.Contains(j.raw, []byte("managedFields")) {
			t.Errorf("%s: managedFields kept twice, in the JSON too: %s", j.Name, j.raw)
		}
	}

	// Read back as the store has it: same content, same Go types.
	for _, w := range created {
		fromStore, fromCache := &unstructured.Unstructured{}, &unstructured.Unstructured{}
		if err := env.store.Get(ctx, podKey(w.GetName()), storage.GetOptions{}, fromStore); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, podKey(w.GetName()), storage.GetOptions{ResourceVersion: "0"}, fromCache); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fromCache.Object, fromStore.Object) {
			t.Errorf("%s from the cache differs from the store's:\ncache %#v\nstore %#v", w.GetName(), fromCache.Object, fromStore.Object)
		}
		// A reader owns what it got.
		fromCache.Object["spec"].(map[string]any)["replicas"] = int64(99)
		fromCache.SetLabels(map[string]string{"app": "changed"})
		again := &unstructured.Unstructured{}
		if err := c.Get(ctx, podKey(w.GetName()), storage.GetOptions{ResourceVersion: "0"}, again); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again.Object, fromStore.Object) {
			t.Errorf("%s: changing what Get returned changed the cache: %#v", w.GetName(), again.Object)
		}
	}

	// Lists: whole, by field selector on the content, and as cached
	// items whose JSON is the store object's.
	storeList, cacheList := &unstructured.UnstructuredList{}, &unstructured.UnstructuredList{}
	all := storage.ListOptions{Recursive: true, Predicate: storage.Everything}
	if err := env.store.GetList(ctx, podPrefix+"ns", all, storeList); err != nil {
		t.Fatal(err)
	}
	all.ResourceVersion = "0"
	if err := c.GetList(ctx, podPrefix+"ns", all, cacheList); err != nil {
		t.Fatal(err)
	}
	if len(cacheList.Items) != len(storeList.Items) || len(cacheList.Items) != len(colors) {
		t.Fatalf("cache listed %d, store %d, want %d", len(cacheList.Items), len(storeList.Items), len(colors))
	}
	for i := range storeList.Items {
		if !reflect.DeepEqual(cacheList.Items[i].Object, storeList.Items[i].Object) {
			t.Errorf("list item %d differs:\ncache %#v\nstore %#v", i, cacheList.Items[i].Object, storeList.Items[i].Object)
		}
	}
	red := storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.SelectionPredicate{
		Label: labels.Everything(), Field: fields.OneTermEqualSelector("spec.color", "red"), GetAttrs: env.cache.opts.AttrFunc,
	}}
	redList := &unstructured.UnstructuredList{}
	if err := c.GetList(ctx, podPrefix+"ns", red, redList); err != nil {
		t.Fatal(err)
	}
	if got := names(redList); !reflect.DeepEqual(got, []string{"w0", "w2"}) {
		t.Errorf("spec.color=red listed %v, want [w0 w2]", got)
	}
	cached, err := c.ListCached(ctx, podPrefix+"ns", all)
	if err != nil {
		t.Fatal(err)
	}
	for i, item := range cached.Items {
		var got, want bytes.Buffer
		if err := unstructured.UnstructuredJSONScheme.Encode(item, &got); err != nil {
			t.Fatal(err)
		}
		if err := unstructured.UnstructuredJSONScheme.Encode(&storeList.Items[i], &want); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("item %d encodes as\n%s\nwant\n%s", i, got.String(), want.String())
		}
	}

	// A watch's events carry the same objects, and an update replaces
	// the kept JSON.
	w, err := c.Watch(ctx, podPrefix+"ns", storage.ListOptions{ResourceVersion: last, Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	updated := &unstructured.Unstructured{}
	err = c.GuaranteedUpdate(ctx, podKey("w1"), updated, false, nil, func(in runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
		u := in.(*unstructured.Unstructured)
		u.Object["spec"].(map[string]any)["color"] = "green"
		return u, nil, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Modified {
			t.Fatalf("event %s, want MODIFIED", ev.Type)
		}
		got := ev.Object.(runtime.CacheableObject).GetObject().(*unstructured.Unstructured)
		if !reflect.DeepEqual(got.Object, updated.Object) {
			t.Errorf("watch event object\n%#v\nwant\n%#v", got.Object, updated.Object)
		}
		if color, _, _ := unstructured.NestedString(got.Object, "spec", "color"); color != "green" {
			t.Errorf("event's spec.color %q, want green", color)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event for the update")
	}
}

func names(l *unstructured.UnstructuredList) []string {
	var out []string
	for _, u := range l.Items {
		out = append(out, u.GetName())
	}
	return out
}

func mustParseRV(t *testing.T, rv string) uint64 {
	t.Helper()
	n, err := storage.APIObjectVersioner{}.ParseResourceVersion(rv)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
