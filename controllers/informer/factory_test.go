package informer_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/listwatch"
)

// requests counts the lists and watches a client sends, by path.
type requests struct {
	mu      sync.Mutex
	lists   map[string]int
	watches map[string]int
}

func (q *requests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		q.mu.Lock()
		key := r.URL.Path
		if s := r.URL.Query().Get("labelSelector"); s != "" {
			key += "?labelSelector=" + s
		}
		if r.URL.Query().Get("watch") == "true" {
			q.watches[key]++
		} else if r.Method == http.MethodGet {
			q.lists[key]++
		}
		q.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (q *requests) counts(key string) (lists, watches int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.lists[key], q.watches[key]
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingClient is a clientset whose lists and watches are counted.
func countingClient(t *testing.T) (kubernetes.Interface, *requests) {
	t.Helper()
	q := &requests{lists: map[string]int{}, watches: map[string]int{}}
	cfg := rest.CopyConfig(srv.RESTConfig())
	cfg.WrapTransport = q.wrap
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, q
}

func namespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "inf-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func byValue(c *v1.ConfigMap) ([]string, error) { return []string{c.Data["k"]}, nil }

// Two informers of one Shape share one list, one watch and one store;
// each keeps its handlers, called one after the other for every event,
// and its index. Another selector makes another cache.
func TestFactorySharesOneListAndWatch(t *testing.T) {
	cs, q := countingClient(t)
	ns := namespace(t, cs)
	cms := cs.CoreV1().ConfigMaps(ns)
	f := informer.NewFactory()
	shape := informer.Shape{Resource: "configmaps", Namespace: ns}
	var mu sync.Mutex
	var seen []string
	record := func(who string) informer.Handlers[*v1.ConfigMap] {
		note := func(s string, c *v1.ConfigMap) {
			if publishedRootCA(c) {
				return
			}
			mu.Lock()
			seen = append(seen, who+" "+s+" "+c.Name)
			mu.Unlock()
		}
		return informer.Handlers[*v1.ConfigMap]{
			OnAdd:    func(c *v1.ConfigMap) { note("add", c) },
			OnUpdate: func(_, c *v1.ConfigMap) { note("update", c) },
			OnDelete: func(c *v1.ConfigMap) { note("delete", c) },
		}
	}
	a, err := informer.For(f, informer.Options[*v1.ConfigMap]{
		Name: "a", Shape: shape, ListerWatcher: listwatch.FromTypedClient(cms, nil),
		Indexers: map[string]listwatch.IndexFunc[*v1.ConfigMap]{informer.NamespaceIndex: informer.ByNamespace[*v1.ConfigMap]},
		Handlers: record("a"),
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := informer.For(f, informer.Options[*v1.ConfigMap]{
		Name: "b", Shape: shape, ListerWatcher: listwatch.FromTypedClient(cms, nil),
		Indexers: map[string]listwatch.IndexFunc[*v1.ConfigMap]{
			informer.NamespaceIndex: informer.ByNamespace[*v1.ConfigMap], "value": byValue,
		},
		Handlers: record("b"),
	})
	if err != nil {
		t.Fatal(err)
	}
	labelled := shape
	labelled.LabelSelector = "app=x"
	other, err := informer.For(f, informer.Options[*v1.ConfigMap]{
		Name: "labelled", Shape: labelled, ListerWatcher: listwatch.FromTypedClient(cms, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if a.Store() != b.Store() || a.Store() == other.Store() {
		t.Fatal("one Shape should have one store, two Shapes two")
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, inf := range []*informer.Informer[*v1.ConfigMap]{a, b, other} {
		wg.Go(func() { inf.Run(ctx) })
	}
	defer func() { cancel(); wg.Wait() }()
	if err := informer.WaitForSync(t.Context(), a, b, other); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(t.Context(), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one", Labels: map[string]string{"app": "x"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Update(t.Context(), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one", Labels: map[string]string{"app": "x"}}, Data: map[string]string{"k": "v"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(t.Context(), "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"a add one", "b add one", "a update one", "b update one", "a delete one", "b delete one"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		got := strings.Join(seen, ", ")
		mu.Unlock()
		if got == strings.Join(want, ", ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handlers saw %s\nwant %s", got, strings.Join(want, ", "))
		}
	}
	for _, index := range []string{informer.NamespaceIndex, "value"} {
		if _, err := a.Store().ByIndex(index, ns); err != nil {
			t.Errorf("index %s: %v", index, err)
		}
	}
	path := "/api/v1/namespaces/" + ns + "/configmaps"
	// A synced cache has listed; its watch may still be on its way (the
	// labelled cache has no handlers to wait for).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, watches := q.counts(path + "?labelSelector=app=x"); watches > 0 {
			break
		}
	}
	if lists, watches := q.counts(path); lists != 1 || watches != 1 {
		t.Errorf("the shared cache sent %d lists and %d watches, want 1 and 1", lists, watches)
	}
	if lists, watches := q.counts(path + "?labelSelector=app=x"); lists != 1 || watches != 1 {
		t.Errorf("the labelled cache sent %d lists and %d watches, want 1 and 1", lists, watches)
	}
}

// A shared index name is kept once when both ask for the same function,
// and refused with another; an informer asked for once its cache is in
// use is refused.
func TestFactoryRefusesClashesAndLateInformers(t *testing.T) {
	cs, _ := countingClient(t)
	lw := listwatch.FromTypedClient(cs.CoreV1().ConfigMaps("default"), nil)
	shape := informer.Shape{Resource: "configmaps", Namespace: "default"}
	f := informer.NewFactory()
	same := map[string]listwatch.IndexFunc[*v1.ConfigMap]{informer.NamespaceIndex: informer.ByNamespace[*v1.ConfigMap]}
	first, err := informer.For(f, informer.Options[*v1.ConfigMap]{Name: "first", Shape: shape, ListerWatcher: lw, Indexers: same})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := informer.For(f, informer.Options[*v1.ConfigMap]{Name: "same", Shape: shape, ListerWatcher: lw, Indexers: same}); err != nil {
		t.Fatalf("the same index function twice: %v", err)
	}
	_, err = informer.For(f, informer.Options[*v1.ConfigMap]{Name: "clash", Shape: shape, ListerWatcher: lw,
		Indexers: map[string]listwatch.IndexFunc[*v1.ConfigMap]{informer.NamespaceIndex: byValue}})
	if err == nil || !strings.Contains(err.Error(), `index "namespace" is already on this cache`) {
		t.Fatalf("err = %v, want a clash", err)
	}
	// Another type of the same Shape is another cache: no clash.
	if _, err := informer.For(f, informer.Options[*metav1.PartialObjectMetadata]{Name: "metadata", Shape: shape, ListerWatcher: lw,
		Indexers: map[string]listwatch.IndexFunc[*metav1.PartialObjectMetadata]{informer.NamespaceIndex: func(*metav1.PartialObjectMetadata) ([]string, error) { return nil, nil }}}); err != nil {
		t.Fatalf("metadata informer of the same Shape: %v", err)
	}
	first.Store()
	if _, err := informer.For(f, informer.Options[*v1.ConfigMap]{Name: "late", Shape: shape, ListerWatcher: lw}); err == nil {
		t.Fatal("an informer asked for after its cache was in use was given")
	}
	if _, err := informer.For(f, informer.Options[*v1.ConfigMap]{Name: "no shape", ListerWatcher: lw}); err == nil {
		t.Fatal("a shared informer without Shape.Resource was given")
	}
}

// A shared cache runs until the last of its informers' Runs ends; an
// informer whose Run ended hears nothing more.
func TestSharedCacheStopsWithTheLastRun(t *testing.T) {
	cs, q := countingClient(t)
	ns := namespace(t, cs)
	cms := cs.CoreV1().ConfigMaps(ns)
	f := informer.NewFactory()
	shape := informer.Shape{Resource: "configmaps", Namespace: ns}
	heard := map[string]chan string{"early": make(chan string, 8), "late": make(chan string, 8)}
	infs := map[string]*informer.Informer[*v1.ConfigMap]{}
	for _, who := range []string{"early", "late"} {
		inf, err := informer.For(f, informer.Options[*v1.ConfigMap]{
			Name: who, Shape: shape, ListerWatcher: listwatch.FromTypedClient(cms, nil),
			Handlers: informer.Handlers[*v1.ConfigMap]{OnAdd: func(c *v1.ConfigMap) {
				if !publishedRootCA(c) {
					heard[who] <- c.Name
				}
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		infs[who] = inf
	}
	earlyCtx, stopEarly := context.WithCancel(context.Background())
	lateCtx, stopLate := context.WithCancel(context.Background())
	earlyDone, lateDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(earlyDone); infs["early"].Run(earlyCtx) }()
	go func() { defer close(lateDone); infs["late"].Run(lateCtx) }()
	defer func() { stopEarly(); stopLate(); <-earlyDone; <-lateDone }()
	if err := informer.WaitForSync(t.Context(), infs["late"]); err != nil {
		t.Fatal(err)
	}
	stopEarly()
	<-earlyDone
	if _, err := cms.Create(t.Context(), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-heard["late"]:
		if got != "after" {
			t.Fatalf("late heard of %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cache stopped with the first Run")
	}
	select {
	case got := <-heard["early"]:
		t.Fatalf("an informer whose Run ended heard of %q", got)
	default:
	}
	stopLate()
	<-lateDone
	if lists, watches := q.counts("/api/v1/namespaces/" + ns + "/configmaps"); lists != 1 || watches != 1 {
		t.Errorf("%d lists and %d watches, want 1 and 1", lists, watches)
	}
}

// publishedRootCA says whether c is the kube-root-ca.crt that the root CA
// publisher (in the shared server's controllers) adds to every namespace
// at a time of its own: the tests count only their own configMaps.
func publishedRootCA(c *v1.ConfigMap) bool { return c.Name == "kube-root-ca.crt" }
