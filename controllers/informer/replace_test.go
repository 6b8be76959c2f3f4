package informer

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kite-project/kite/listwatch"
)

func cm(name, value string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string]string{"v": value}}
}

// A re-list reports what it found new, changed and gone.
func TestReplaceReportsTheDifference(t *testing.T) {
	var got []string
	n := &notifying[*v1.ConfigMap]{
		store: listwatch.NewIndexer(listwatch.IndexerOptions[*v1.ConfigMap]{}),
		regs: []*registration[*v1.ConfigMap]{{h: Handlers[*v1.ConfigMap]{
			OnAdd:    func(c *v1.ConfigMap) { got = append(got, "add "+c.Name) },
			OnUpdate: func(old, c *v1.ConfigMap) { got = append(got, "update "+c.Name+" "+old.Data["v"]+"->"+c.Data["v"]) },
			OnDelete: func(c *v1.ConfigMap) { got = append(got, "delete "+c.Name) },
		}}},
	}
	if err := n.Replace([]runtime.Object{cm("a", "1"), cm("b", "1")}, "10"); err != nil {
		t.Fatal(err)
	}
	if err := n.Update(cm("a", "2")); err != nil {
		t.Fatal(err)
	}
	if err := n.Replace([]runtime.Object{cm("a", "3"), cm("c", "1")}, "20"); err != nil {
		t.Fatal(err)
	}
	if err := n.Delete(cm("c", "1")); err != nil {
		t.Fatal(err)
	}
	want := []string{"add a", "add b", "update a 1->2", "update a 2->3", "add c", "delete b", "delete c"}
	if !slices.Equal(got, want) {
		t.Fatalf("handlers saw\n %v\nwant\n %v", got, want)
	}
	if n.store.Len() != 1 || n.store.ResourceVersion() != "20" {
		t.Fatalf("store has %d objects at %q, want 1 at 20", n.store.Len(), n.store.ResourceVersion())
	}
}

func TestWrongTypeIsRefused(t *testing.T) {
	n := &notifying[*v1.ConfigMap]{store: listwatch.NewIndexer(listwatch.IndexerOptions[*v1.ConfigMap]{})}
	if err := n.Add(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}); err == nil {
		t.Fatal("a pod went into a configmap informer")
	}
}

// The cache keeps no managedFields: no controller reads them.
func TestManagedFieldsAreNotCached(t *testing.T) {
	n := &notifying[*v1.ConfigMap]{store: listwatch.NewIndexer(listwatch.IndexerOptions[*v1.ConfigMap]{})}
	withFields := func(name string) *v1.ConfigMap {
		c := cm(name, "1")
		c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
		return c
	}
	if err := n.Replace([]runtime.Object{withFields("listed")}, "10"); err != nil {
		t.Fatal(err)
	}
	if err := n.Add(withFields("watched")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"listed", "watched"} {
		if c, ok := n.store.Get("ns/" + name); !ok || c.ManagedFields != nil {
			t.Errorf("%s: cached %v with managedFields %v", name, ok, c.ManagedFields)
		}
	}
}
