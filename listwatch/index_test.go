package listwatch

import (
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const byNode = "spec.nodeName"

func nodeIndexer() *Indexer[*v1.Pod] {
	return NewIndexer(IndexerOptions[*v1.Pod]{Indexers: map[string]IndexFunc[*v1.Pod]{
		byNode: func(p *v1.Pod) ([]string, error) {
			if p.Spec.NodeName == "" {
				return nil, nil
			}
			return []string{p.Spec.NodeName}, nil
		},
	}})
}

func names(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Namespace + "/" + p.Name
	}
	return out
}

func TestIndexerKeepsIndexesInStepWithWrites(t *testing.T) {
	tests := []struct {
		name       string
		writes     func(x *Indexer[*v1.Pod]) error
		wantKeys   []string
		wantByNode map[string][]string
		wantValues []string
		wantRV     string
	}{{
		name: "adds are indexed",
		writes: func(x *Indexer[*v1.Pod]) error {
			return errors.Join(x.Add(testPod("ns", "a", "1", "n1")), x.Add(testPod("ns", "b", "2", "n2")), x.Add(testPod("", "c", "3", "n1")))
		},
		wantKeys:   []string{"c", "ns/a", "ns/b"},
		wantByNode: map[string][]string{"n1": {"/c", "ns/a"}, "n2": {"ns/b"}},
		wantValues: []string{"n1", "n2"},
		wantRV:     "3",
	}, {
		name: "an update moves the object between index values and empty values go",
		writes: func(x *Indexer[*v1.Pod]) error {
			return errors.Join(x.Add(testPod("ns", "a", "1", "n1")), x.Update(testPod("ns", "a", "2", "n2")))
		},
		wantKeys:   []string{"ns/a"},
		wantByNode: map[string][]string{"n1": {}, "n2": {"ns/a"}},
		wantValues: []string{"n2"},
		wantRV:     "2",
	}, {
		name: "a delete unindexes, and deleting an absent key is no error",
		writes: func(x *Indexer[*v1.Pod]) error {
			return errors.Join(x.Add(testPod("ns", "a", "1", "n1")), x.Delete(testPod("ns", "a", "2", "")), x.Delete(testPod("ns", "zz", "3", "")))
		},
		wantKeys:   []string{},
		wantByNode: map[string][]string{"n1": {}},
		wantValues: []string{},
		wantRV:     "3",
	}, {
		name: "replace swaps everything and takes the list RV",
		writes: func(x *Indexer[*v1.Pod]) error {
			return errors.Join(x.Add(testPod("ns", "old", "1", "n1")),
				x.Replace([]runtime.Object{testPod("ns", "a", "5", "n2"), testPod("ns", "b", "6", "")}, "9"))
		},
		wantKeys:   []string{"ns/a", "ns/b"},
		wantByNode: map[string][]string{"n1": {}, "n2": {"ns/a"}},
		wantValues: []string{"n2"},
		wantRV:     "9",
	}, {
		name: "in a replace with one key twice the later object wins, index entries too",
		writes: func(x *Indexer[*v1.Pod]) error {
			return x.Replace([]runtime.Object{testPod("ns", "a", "5", "n1"), testPod("ns", "a", "6", "n2")}, "9")
		},
		wantKeys:   []string{"ns/a"},
		wantByNode: map[string][]string{"n1": {}, "n2": {"ns/a"}},
		wantValues: []string{"n2"},
		wantRV:     "9",
	}, {
		name: "a bookmark RV is kept",
		writes: func(x *Indexer[*v1.Pod]) error {
			err := x.Add(testPod("ns", "a", "1", "n1"))
			x.UpdateResourceVersion("40")
			return err
		},
		wantKeys:   []string{"ns/a"},
		wantByNode: map[string][]string{"n1": {"ns/a"}},
		wantValues: []string{"n1"},
		wantRV:     "40",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := nodeIndexer()
			if err := tt.writes(x); err != nil {
				t.Fatal(err)
			}
			if got := x.Keys(); !slices.Equal(got, tt.wantKeys) {
				t.Errorf("keys %q, want %q", got, tt.wantKeys)
			}
			if x.Len() != len(tt.wantKeys) || len(x.List()) != len(tt.wantKeys) {
				t.Errorf("len %d, list %d, want %d", x.Len(), len(x.List()), len(tt.wantKeys))
			}
			for node, want := range tt.wantByNode {
				got, err := x.ByIndex(byNode, node)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(slices.Sorted(slices.Values(names(got))), want) {
					t.Errorf("ByIndex(%s) = %q, want %q", node, names(got), want)
				}
			}
			if got, _ := x.IndexValues(byNode); !slices.Equal(got, tt.wantValues) {
				t.Errorf("IndexValues = %q, want %q", got, tt.wantValues)
			}
			if x.ResourceVersion() != tt.wantRV {
				t.Errorf("rv %q, want %q", x.ResourceVersion(), tt.wantRV)
			}
		})
	}
}

func TestIndexerRefusesBadWritesAndStaysUnchanged(t *testing.T) {
	failing := NewIndexer(IndexerOptions[*v1.Pod]{Indexers: map[string]IndexFunc[*v1.Pod]{
		"bad": func(p *v1.Pod) ([]string, error) {
			if p.Name == "bad" {
				return nil, errors.New("cannot index")
			}
			return []string{p.Name}, nil
		},
	}})
	if err := failing.Add(testPod("ns", "good", "1", "")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		write func() error
	}{
		{"an object of another type", func() error { return failing.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}) }},
		{"an object without name", func() error { return failing.Add(&v1.Pod{}) }},
		{"an index function error", func() error { return failing.Add(testPod("ns", "bad", "2", "")) }},
		{"a replace with one bad object", func() error {
			return failing.Replace([]runtime.Object{testPod("ns", "x", "3", ""), testPod("ns", "bad", "4", "")}, "4")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.write(); err == nil {
				t.Fatal("write succeeded")
			}
			if got := failing.Keys(); !slices.Equal(got, []string{"ns/good"}) || failing.ResourceVersion() != "1" {
				t.Fatalf("store changed: keys %q rv %q", got, failing.ResourceVersion())
			}
		})
	}
	if _, err := failing.ByIndex("nope", "x"); err == nil {
		t.Fatal("ByIndex of an unknown index succeeded")
	}
	if p, ok := failing.Get("ns/good"); !ok || p.Name != "good" {
		t.Fatalf("Get = %v, %v", p, ok)
	}
}
