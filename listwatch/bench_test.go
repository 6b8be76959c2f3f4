package listwatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// pagedPods is an in-process ListerWatcher serving pages of pods, as
// upstream's BenchmarkReflectorList (3 pages of 100 pods); its watches fail
// at once, so that client-go's ListAndWatch returns after its list.
type pagedPods struct {
	pages [][]v1.Pod
}

func newPagedPods(pages, perPage int) *pagedPods {
	p := &pagedPods{}
	for i := range pages {
		var page []v1.Pod
		for j := range perPage {
			page = append(page, *testPod("ns", fmt.Sprintf("pod-%d-%d", i, j), strconv.Itoa(i*perPage+j+1), fmt.Sprintf("node-%d", j%10)))
		}
		p.pages = append(p.pages, page)
	}
	return p
}

func (p *pagedPods) List(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	i := 0
	if opts.Continue != "" {
		i, _ = strconv.Atoi(opts.Continue)
	}
	list := &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1000"}, Items: p.pages[i]}
	if i+1 < len(p.pages) {
		list.Continue = strconv.Itoa(i + 1)
	}
	return list, nil
}

func (p *pagedPods) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, errors.New("benchmark: no watch")
}

// BenchmarkReflectorList compares one paged list into an indexed store
// (3 pages of 100 pods): ours and client-go's, side by side.
func BenchmarkReflectorList(b *testing.B) {
	lw := newPagedPods(3, 100)
	ctx := context.Background()
	b.Run("kite", func(b *testing.B) {
		r, err := NewReflector(Options{ListerWatcher: lw, Store: nodeIndexer(), PageSize: 100})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := r.list(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("client-go", func(b *testing.B) {
		store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byNode: clientGoNodeIndex})
		r := cache.NewReflectorWithOptions(noWatchList{&cache.ListWatch{
			ListWithContextFunc:  lw.List,
			WatchFuncWithContext: lw.Watch,
		}}, &v1.Pod{}, store, cache.ReflectorOptions{})
		r.WatchListPageSize = 100
		b.ReportAllocs()
		for b.Loop() {
			// Lists, replaces, then returns on the failing watch.
			_ = r.ListAndWatchWithContext(ctx)
		}
	})
}

func clientGoNodeIndex(obj any) ([]string, error) {
	return []string{obj.(*v1.Pod).Spec.NodeName}, nil
}

func podsOn(n, nodes int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pods[i] = testPod("ns", fmt.Sprintf("pod-%d", i), strconv.Itoa(i+1), fmt.Sprintf("node-%d", i%nodes))
	}
	return pods
}

// BenchmarkIndexerUpdate compares updating pods in a store indexed by
// spec.nodeName: ours and client-go's.
func BenchmarkIndexerUpdate(b *testing.B) {
	pods := podsOn(10000, 100)
	b.Run("kite", func(b *testing.B) {
		x := nodeIndexer()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := x.Update(pods[i%len(pods)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("client-go", func(b *testing.B) {
		x := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byNode: clientGoNodeIndex})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := x.Update(pods[i%len(pods)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkIndexerByIndex compares reading one node's 100 pods out of
// 10 000: ours (typed, in key order) and client-go's.
func BenchmarkIndexerByIndex(b *testing.B) {
	pods := podsOn(10000, 100)
	b.Run("kite", func(b *testing.B) {
		x := nodeIndexer()
		for _, p := range pods {
			_ = x.Add(p)
		}
		b.ReportAllocs()
		for b.Loop() {
			if got, _ := x.ByIndex(byNode, "node-7"); len(got) != 100 {
				b.Fatalf("%d pods", len(got))
			}
		}
	})
	b.Run("client-go", func(b *testing.B) {
		x := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{byNode: clientGoNodeIndex})
		for _, p := range pods {
			_ = x.Add(p)
		}
		b.ReportAllocs()
		for b.Loop() {
			if got, _ := x.ByIndex(byNode, "node-7"); len(got) != 100 {
				b.Fatalf("%d pods", len(got))
			}
		}
	})
}
