package watchcache

import (
	"fmt"
	"slices"
	"testing"

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

func TestFieldSetAnswersAsItsMap(t *testing.T) {
	var l fieldLayouts
	set := podFields("a", "node-1", "Running")
	f := l.compact(set, nil)
	for _, name := range []string{"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase", "spec.restartPolicy", ""} {
		if got, want := f.Has(name), set.Has(name); got != want {
			t.Errorf("Has(%q) = %v, the map says %v", name, got, want)
		}
		if got, want := f.Get(name), set.Get(name); got != want {
			t.Errorf("Get(%q) = %q, the map says %q", name, got, want)
		}
	}
}

func TestFieldSetsOfOneShapeShareTheirNames(t *testing.T) {
	var l fieldLayouts
	a := l.compact(podFields("a", "node-1", "Running"), nil)
	b := l.compact(podFields("b", "node-2", "Pending"), nil)
	other := l.compact(fields.Set{"metadata.name": "c"}, nil)
	again := l.compact(podFields("d", "node-3", "Failed"), nil)
	if a.names != b.names || a.names != again.names {
		t.Error("sets with the same field names got different name lists")
	}
	if other.names == a.names {
		t.Error("sets with different field names share a name list")
	}
	if b.Get("spec.nodeName") != "node-2" || again.Get("status.phase") != "Failed" || other.Get("metadata.name") != "c" {
		t.Errorf("values mixed up: %v %v %v", b.values, again.values, other.values)
	}
}

func TestFieldLayoutsStopSharingPastTheirBound(t *testing.T) {
	var l fieldLayouts
	for i := range maxLayouts + 10 {
		name := fmt.Sprintf("f%d", i)
		f := l.compact(fields.Set{name: "v", "metadata.name": "x"}, nil)
		if f.Get(name) != "v" || f.Get("metadata.name") != "x" || f.Has("f-none") {
			t.Fatalf("set %d answers wrongly: %v", i, f.values)
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
	f := l.compact(set, nil)
	cases := []struct{ label, field string }{
		{"", ""},
		{"app=web", ""},
		{"app=db", ""},
		{"", "spec.nodeName=node-1"},
		{"", "spec.nodeName=node-2"},
		{"", "spec.nodeName!=node-2"},
		{"", "status.phase=Running,metadata.name=a"},
		{"", "spec.restartPolicy=Always"}, // a field the object does not have
		{"", "spec.restartPolicy!=Always"},
		{"tier in (front,back)", "metadata.namespace=default"},
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
			if got, want := matchAttributes(&p, lbls, f), p.MatchesObjectAttributes(lbls, set); got != want {
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
	return l.compact(fields.Set{}, func(i int) string { return values[i] })
}

func TestFieldSetHoldsIndexValuesOfFieldsAndOfOtherIndexers(t *testing.T) {
	l := fieldLayouts{indexNames: []string{"spec.nodeName", "by-image", "metadata.name"}}
	calls := 0
	f := l.compact(podFields("a", "node-1", "Running"), func(i int) string {
		calls++
		if i != 1 {
			t.Errorf("indexer %d computed, but it is a field", i)
		}
		return "nginx"
	})
	if got := []string{f.index(0), f.index(1), f.index(2)}; !slices.Equal(got, []string{"node-1", "nginx", "a"}) {
		t.Errorf("index values %q, want [node-1 nginx a]", got)
	}
	if calls != 1 {
		t.Errorf("indexer called %d times, want once", calls)
	}
	if f.Has("by-image") || f.Get("by-image") != "" {
		t.Error("an indexer that is not a field shows as one to selectors")
	}
	if sel := fields.OneTermEqualSelector("by-image", "nginx"); sel.Matches(f) {
		t.Error("a selector matched an index value that is not a field")
	}
}
