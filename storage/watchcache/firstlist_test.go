package watchcache

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/storage"

	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

// TestLargeFirstListIsCachedWhole: a first list large enough to be
// decoded and prepared on several goroutines (3 072 pods, stored before
// the cache starts) gives a cache that answers as etcd does: every pod
// once, in key order, at its resourceVersion, and each node's pods
// through the index.
func TestLargeFirstListIsCachedWhole(t *testing.T) {
	const pods, nodes = 3 * parallelPrepareMin, 7
	ctx, c, env := testSetup(t, withNodeNameIndex, withOptions(func(o *Options) {
		seed(t, o.Store, pods, nodes)
	}))
	fromEtcd := &example.PodList{}
	if err := env.store.GetList(ctx, podPrefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything}, fromEtcd); err != nil {
		t.Fatal(err)
	}
	cached := &example.PodList{}
	if err := c.GetList(ctx, podPrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything}, cached); err != nil {
		t.Fatal(err)
	}
	if len(fromEtcd.Items) != pods || len(cached.Items) != pods {
		t.Fatalf("etcd holds %d pods and the cache %d, want %d", len(fromEtcd.Items), len(cached.Items), pods)
	}
	for i := range cached.Items {
		got, want := &cached.Items[i], &fromEtcd.Items[i]
		if got.Name != want.Name || got.ResourceVersion != want.ResourceVersion || got.Spec.NodeName != want.Spec.NodeName {
			t.Fatalf("item %d: cached %s@%s on %s, etcd %s@%s on %s", i, got.Name, got.ResourceVersion, got.Spec.NodeName, want.Name, want.ResourceVersion, want.Spec.NodeName)
		}
	}
	for n := range nodes {
		node := fmt.Sprintf("node-%d", n)
		pred := storage.SelectionPredicate{Label: labels.Everything(), Field: fields.OneTermEqualSelector("spec.nodeName", node), GetAttrs: podAttrs, IndexFields: []string{"spec.nodeName"}}
		list := &example.PodList{}
		if err := c.GetList(ctx, podPrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: pred}, list); err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, p := range fromEtcd.Items {
			if p.Spec.NodeName == node {
				want++
			}
		}
		if len(list.Items) != want {
			t.Errorf("%s: %d pods from the index, %d in etcd", node, len(list.Items), want)
		}
		for _, p := range list.Items {
			if p.Spec.NodeName != node {
				t.Errorf("%s: the index returned %s of %s", node, p.Name, p.Spec.NodeName)
			}
		}
	}
}

// seed creates n pods in namespace ns, spread over nodes, through store.
func seed(t *testing.T, store storage.Interface, n, nodes int) {
	t.Helper()
	etcdtest.CreateAll(t, n, func(i int) error {
		p := &example.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%05d", i), Namespace: "ns"},
			Spec:       example.PodSpec{NodeName: fmt.Sprintf("node-%d", i%nodes)},
		}
		return store.Create(context.Background(), podPrefix+"ns/"+p.Name, p, &example.Pod{}, 0)
	})
}
