package watchcache

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/storage"
)

func podFields(name, node, phase string) fields.Set {
	return fields.Set{
		"metadata.name":      name,
		"metadata.namespace": "default",
		"spec.nodeName":      node,
		"status.phase":       phase,
	}
}

// fieldElement is an element of a pod named by set's metadata fields (or
// named other, when given), with set as its fields.
func fieldElement(l *fieldLayouts, set fields.Set, lbls labels.Set, other ...string) *element {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: set["metadata.name"], Namespace: set["metadata.namespace"]}}
	if len(other) == 2 {
		pod.Name, pod.Namespace = other[0], other[1]
	}
	return &element{labels: lbls, fields: l.compact(set, pod, func(int) string { return "" }), obj: CachedObject{orig: pod}}
}

func TestFieldSetAnswersAsItsMap(t *testing.T) {
	cases := []struct {
		name  string
		other []string
	}{
		{"name and namespace from the object", nil},
		{"name and namespace stored (the object's differ)", []string{"b", "elsewhere"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var l fieldLayouts
			set := podFields("a", "node-1", "Running")
			f := (*elementFields)(fieldElement(&l, set, nil, tc.other...))
			for _, name := range []string{"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase", "spec.restartPolicy", ""} {
				if got, want := f.Has(name), set.Has(name); got != want {
					t.Errorf("Has(%q) = %v, the map says %v", name, got, want)
				}
				if got, want := f.Get(name), set.Get(name); got != want {
					t.Errorf("Get(%q) = %q, the map says %q", name, got, want)
				}
			}
		})
	}
}

func TestFieldSetStoresOnlyWhatTheObjectDoesNotHold(t *testing.T) {
	var l fieldLayouts
	own := fieldElement(&l, podFields("a", "node-1", "Running"), nil)
	if w := own.fields.names.width; w != 2 {
		t.Errorf("%d values stored, want 2 (name and namespace are the object's)", w)
	}
	other := fieldElement(&l, podFields("a", "node-1", "Running"), nil, "b", "elsewhere")
	if w := other.fields.names.width; w != 4 {
		t.Errorf("%d values stored, want 4", w)
	}
	if own.fields.names == other.fields.names {
		t.Error("layouts that read different fields from the object are shared")
	}
}

func TestFieldSetsOfOneShapeShareTheirNames(t *testing.T) {
	var l fieldLayouts
	a := fieldElement(&l, podFields("a", "node-1", "Running"), nil)
	b := fieldElement(&l, podFields("b", "node-2", "Pending"), nil)
	other := fieldElement(&l, fields.Set{"metadata.name": "c"}, nil)
	again := fieldElement(&l, podFields("d", "node-3", "Failed"), nil)
	if a.fields.names != b.fields.names || a.fields.names != again.fields.names {
		t.Error("sets with the same field names got different name lists")
	}
	if other.fields.names == a.fields.names {
		t.Error("sets with different field names share a name list")
	}
	get := func(e *element, name string) string { return (*elementFields)(e).Get(name) }
	if get(b, "spec.nodeName") != "node-2" || get(again, "status.phase") != "Failed" || get(other, "metadata.name") != "c" {
		t.Error("values mixed up")
	}
}

func TestFieldLayoutsStopSharingPastTheirBound(t *testing.T) {
	var l fieldLayouts
	for i := range maxLayouts + 10 {
		name := fmt.Sprintf("f%d", i)
		f := (*elementFields)(fieldElement(&l, fields.Set{name: "v", "metadata.name": "x"}, nil))
		if f.Get(name) != "v" || f.Get("metadata.name") != "x" || f.Has("f-none") {
			t.Fatalf("set %d answers wrongly", i)
		}
	}
	if len(l.all) != maxLayouts {
		t.Errorf("%d name lists kept, want the bound %d", len(l.all), maxLayouts)
	}
}

func TestMatchAttributesAgreesWithSelectionPredicate(t *testing.T) {
	var l fieldLayouts
	lbls := labels.Set{"app": "web", "tier": "front"}
	set := podFields("a", "node-1", "Running")
	e := fieldElement(&l, set, lbls)
	cases := []struct{ label, field string }{
		{"", ""},
		{"app=web", ""},
		{"app=db", ""},
		{"", "spec.nodeName=node-1"},
		{"", "spec.nodeName=node-2"},
		{"", "spec.nodeName!=node-2"},
		{"", "status.phase=Running,metadata.name=a"},
		{"", "metadata.name=b"},
		{"", "spec.restartPolicy=Always"}, // a field the object does not have
		{"", "spec.restartPolicy!=Always"},
		{"tier in (front,back)", "metadata.namespace=default"},
		{"", "metadata.namespace!=default"},
		{"app=web", "spec.nodeName=node-2"},
		{"!app", ""},
	}
	for _, tc := range cases {
		t.Run(tc.label+"|"+tc.field, func(t *testing.T) {
			ls, err := labels.Parse(tc.label)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := fields.ParseSelector(tc.field)
			if err != nil {
				t.Fatal(err)
			}
			p := storage.SelectionPredicate{Label: ls, Field: fs}
			if got, want := matchAttributes(&p, e), p.MatchesObjectAttributes(lbls, set); got != want {
				t.Errorf("matchAttributes = %v, SelectionPredicate says %v", got, want)
			}
		})
	}
}

// indexedBy is a fieldSet with no fields and the given index values, for
// tests of the state that need only those.
func indexedBy(values ...string) fieldSet {
	var l fieldLayouts
	for i := range values {
		l.indexNames = append(l.indexNames, fmt.Sprintf("index-%d", i))
	}
	return l.compact(fields.Set{}, nil, func(i int) string { return values[i] })
}

func TestFieldSetHoldsIndexValuesOfFieldsAndOfOtherIndexers(t *testing.T) {
	l := fieldLayouts{indexNames: []string{"spec.nodeName", "by-image", "metadata.name"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"}}
	calls := 0
	e := &element{obj: CachedObject{orig: pod}}
	e.fields = l.compact(podFields("a", "node-1", "Running"), pod, func(i int) string {
		calls++
		if i != 1 {
			t.Errorf("indexer %d computed, but it is a field", i)
		}
		return "nginx"
	})
	if got := []string{e.index(0), e.index(1), e.index(2)}; !slices.Equal(got, []string{"node-1", "nginx", "a"}) {
		t.Errorf("index values %q, want [node-1 nginx a]", got)
	}
	if calls != 1 {
		t.Errorf("indexer called %d times, want once", calls)
	}
	f := (*elementFields)(e)
	if f.Has("by-image") || f.Get("by-image") != "" {
		t.Error("an indexer that is not a field shows as one to selectors")
	}
	if sel := fields.OneTermEqualSelector("by-image", "nginx"); sel.Matches(f) {
		t.Error("a selector matched an index value that is not a field")
	}
}

func TestElementSharesItsNameWithItsKey(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string([]byte("web-1")), Namespace: "default"}}
	key := "/pods/default/web-1"
	shareName(pod, key)
	if pod.Name != "web-1" || unsafeData(pod.Name) != unsafeData(key[len(key)-5:]) {
		t.Errorf("name %q does not share the key's bytes", pod.Name)
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}}
	shareName(other, "/pods/default/xweb-1")
	if unsafeData(other.Name) == unsafeData("/pods/default/xweb-1"[15:]) {
		t.Error("a name was taken from a key that ends in a longer name")
	}
}

func unsafeData(s string) *byte { return unsafe.StringData(s) }
