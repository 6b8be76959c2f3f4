package etcd

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

// A page large enough to be decoded by several goroutines gives what the
// one-by-one decoding of small pages gives: every item, in key order, with
// its resourceVersion; and a corrupt value is reported the same way.
func TestLargeListDecodesInParallelAsOneByOne(t *testing.T) {
	const pods = 2*parallelDecodeMin + 50
	ctx, s, client := testSetup(t, withUnsafeCorruptObjectDeletion())
	etcdtest.CreateAll(t, pods, func(i int) error {
		p := newPod("ns", fmt.Sprintf("p%05d", i))
		return s.Create(ctx, "/pods/ns/"+p.Name, p, &example.Pod{}, 0)
	})
	all := storage.ListOptions{Recursive: true, Predicate: storage.Everything}
	whole := &example.PodList{}
	if err := s.GetList(ctx, "/pods/", all, whole); err != nil {
		t.Fatal(err)
	}
	var paged []example.Pod
	for cont := ""; ; {
		p := storage.Everything
		p.Limit, p.Continue = 500, cont
		page := &example.PodList{}
		if err := s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: p}, page); err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page.Items...)
		if cont = page.Continue; cont == "" {
			break
		}
	}
	if len(whole.Items) != pods || len(paged) != pods {
		t.Fatalf("got %d items in one page and %d paged, want %d", len(whole.Items), len(paged), pods)
	}
	for i := range whole.Items {
		w, p := whole.Items[i], paged[i]
		if want := fmt.Sprintf("p%05d", i); w.Name != want || w.Name != p.Name || w.ResourceVersion != p.ResourceVersion || w.ResourceVersion == "" || w.Spec.NodeName != p.Spec.NodeName {
			t.Fatalf("item %d: %s@%s, paged %s@%s, want %s", i, w.Name, w.ResourceVersion, p.Name, p.ResourceVersion, want)
		}
	}
	// An ObjectList holds the same pods, each its own object: decoded
	// in parallel unfiltered, one by one with a filter.
	objects := &ObjectList{}
	if err := s.GetList(ctx, "/pods/", all, objects); err != nil {
		t.Fatal(err)
	}
	sameAsWhole(t, "object list", objects, whole.Items)
	filtered := storage.Everything
	filtered.Label = labels.Everything()
	filtered.Field = fields.OneTermNotEqualSelector("metadata.name", "none")
	filtered.GetAttrs = storage.DefaultNamespaceScopedAttr
	some := &ObjectList{}
	if err := s.GetList(ctx, "/pods/", storage.ListOptions{Recursive: true, Predicate: filtered}, some); err != nil {
		t.Fatal(err)
	}
	sameAsWhole(t, "filtered object list", some, whole.Items)
	if objects.ResourceVersion != whole.ResourceVersion {
		t.Errorf("object list at %s, typed list at %s", objects.ResourceVersion, whole.ResourceVersion)
	}

	const bad = "/pods/ns/p01000x" // sorts in the middle
	if _, err := client.Client.KV.Put(ctx, bad, defaultTestPrefix+"\x00\xffnot an object"); err != nil {
		t.Fatal(err)
	}
	list := &example.PodList{}
	err := s.GetList(ctx, "/pods/", all, list)
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Reason != metav1.StatusReasonStoreReadError || len(st.Status().Details.Causes) != 1 || st.Status().Details.Causes[0].Field != bad {
		t.Fatalf("list with a corrupt value: %v, want a StoreReadError naming %s", err, bad)
	}
	if len(list.Items) != pods {
		t.Errorf("list with a corrupt value has %d items, want the %d good ones", len(list.Items), pods)
	}
	objects = &ObjectList{}
	if err := s.GetList(ctx, "/pods/", all, objects); !errors.As(err, &st) || st.Status().Details.Causes[0].Field != bad || len(objects.Items) != pods {
		t.Errorf("object list with a corrupt value: %v and %d items, want a StoreReadError naming %s and %d items", err, len(objects.Items), bad, pods)
	}
}

// sameAsWhole checks that list holds separate pods equal to want's.
func sameAsWhole(t *testing.T, what string, list *ObjectList, want []example.Pod) {
	t.Helper()
	if len(list.Items) != len(want) {
		t.Fatalf("%s: %d items, want %d", what, len(list.Items), len(want))
	}
	seen := map[*example.Pod]bool{}
	for i, obj := range list.Items {
		p, ok := obj.(*example.Pod)
		if !ok {
			t.Fatalf("%s: item %d is a %T", what, i, obj)
		}
		if p.Name != want[i].Name || p.ResourceVersion != want[i].ResourceVersion || p.Spec.NodeName != want[i].Spec.NodeName {
			t.Fatalf("%s: item %d is %s@%s, want %s@%s", what, i, p.Name, p.ResourceVersion, want[i].Name, want[i].ResourceVersion)
		}
		if seen[p] {
			t.Fatalf("%s: item %d is the same object as an earlier one", what, i)
		}
		seen[p] = true
	}
}
