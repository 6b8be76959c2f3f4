package objectcache

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/listwatch"
)

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// start runs a cache of configMaps over a client whose requests are
// counted, in a namespace of its own named after base (returned) with
// configMap "cm" {v: 1}.
func start(t *testing.T, base string) (*Cache[*v1.ConfigMap], kubernetes.Interface, *atomic.Int32, string) {
	t.Helper()
	ns := fmt.Sprintf("%s-%x", base, time.Now().UnixNano()&0xffffffffff)
	var requests atomic.Int32
	cfg := shared.RESTConfig()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(r)
		})
	})
	counted := kubernetes.NewForConfigOrDie(cfg)
	cs := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options[*v1.ConfigMap]{
		Resource: schema.GroupResource{Resource: "configmaps"},
		ListerWatcher: func(ns string) listwatch.ListerWatcher {
			return listwatch.FromTypedClient[*v1.ConfigMapList](counted.CoreV1().ConfigMaps(ns), nil)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	return c, cs, &requests, ns
}

// run runs c until the test ends.
func run[T runtime.Object](t *testing.T, c *Cache[T]) {
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(runCtx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling, not synchronisation
	}
}

// TestGetCostsNoRequestOnceWatched: the first read of an object waits for
// its list; later reads (a container start each) make no request at all,
// where the agent made a GET per start before.
func TestGetCostsNoRequestOnceWatched(t *testing.T) {
	c, _, requests, ns := start(t, "oc-get")
	c.Set("pod-1", ns, []string{"cm", "nope"})
	cm, err := c.Get(context.Background(), ns, "cm")
	if err != nil || cm.Data["v"] != "1" {
		t.Fatalf("Get = %v, %v; want cm with v=1", cm, err)
	}
	if _, err := c.Get(context.Background(), ns, "nope"); !apierrors.IsNotFound(err) || err.Error() != `configmaps "nope" not found` {
		t.Fatalf("Get of a missing configMap: %v, want upstream's NotFound", err)
	}
	before := requests.Load()
	for range 100 {
		if _, err := c.Get(context.Background(), ns, "cm"); err != nil {
			t.Fatal(err)
		}
	}
	if n := requests.Load() - before; n != 0 {
		t.Errorf("100 reads made %d requests, want 0", n)
	}
}

// TestChangesAreSeen: the cache follows the object through its watch:
// an update, a delete, a create again.
func TestChangesAreSeen(t *testing.T) {
	c, cs, _, ns := start(t, "oc-watch")
	ctx := context.Background()
	c.Set("pod-1", ns, []string{"cm"})
	value := func() string {
		cm, err := c.Get(ctx, ns, "cm")
		if apierrors.IsNotFound(err) {
			return "<none>"
		}
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data["v"]
	}
	if v := value(); v != "1" {
		t.Fatalf("v = %s, want 1", v)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"v": "2"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the update", func() bool { return value() == "2" })
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the delete", func() bool { return value() == "<none>" })
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"v": "3"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the create", func() bool { return value() == "3" })
}

// TestClusterScopedObjects: an object without a namespace (a
// RuntimeClass) is read as the namespaced ones are.
func TestClusterScopedObjects(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(shared.RESTConfig())
	ctx := context.Background()
	name := fmt.Sprintf("oc-rc-%x", time.Now().UnixNano()&0xffffffffff)
	if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: "runc"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.NodeV1().RuntimeClasses().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	c, err := New(Options[*nodev1.RuntimeClass]{
		Resource: schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"},
		ListerWatcher: func(string) listwatch.ListerWatcher {
			return listwatch.FromTypedClient[*nodev1.RuntimeClassList](cs.NodeV1().RuntimeClasses(), nil)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	c.Set("pod-1", "", []string{name, "nope"})
	rc, err := c.Get(ctx, "", name)
	if err != nil || rc.Handler != "runc" {
		t.Fatalf("Get = %v, %v; want the RuntimeClass with handler runc", rc, err)
	}
	if _, err := c.Get(ctx, "", "nope"); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a missing RuntimeClass: %v, want NotFound", err)
	}
}

// TestObjectsAreWatchedWhilePodsReferToThem: an object is watched while
// at least one pod refers to it, as upstream's RegisterPod and
// UnregisterPod; one no pod refers to cannot be read.
func TestObjectsAreWatchedWhilePodsReferToThem(t *testing.T) {
	c, _, _, ns := start(t, "oc-refs")
	c.Set("pod-1", ns, []string{"cm", "other"})
	c.Set("pod-2", ns, []string{"cm"})
	steps := []struct {
		do   func()
		want int
	}{
		{func() {}, 2},
		{func() { c.Set("pod-1", ns, []string{"cm"}) }, 1},
		{func() { c.Forget("pod-1") }, 1},
		{func() { c.Forget("pod-2") }, 0},
	}
	for i, s := range steps {
		s.do()
		if got := c.Watched(); got != s.want {
			t.Errorf("step %d: %d objects watched, want %d", i, got, s.want)
		}
	}
	if _, err := c.Get(context.Background(), ns, "cm"); err == nil || apierrors.IsNotFound(err) {
		t.Errorf("Get of an object no pod refers to = %v, want an error saying so", err)
	}
}
