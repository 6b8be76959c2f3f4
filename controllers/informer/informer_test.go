package informer_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/kitetest"
	"github.com/kite-project/kite/listwatch"
)

var srv *kite.Server

func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { srv = s }) }

// An informer over a real API sees creates, updates and deletes in order.
func TestInformerFollowsTheAPI(t *testing.T) {
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "inf-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(ns.Name)
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 16)
	// The root CA publisher (in the embedded default) adds kube-root-ca.crt
	// to every namespace: the test follows only its own ConfigMaps.
	see := func(event string) {
		if !strings.HasSuffix(event, " kube-root-ca.crt") && !strings.Contains(event, " kube-root-ca.crt ") {
			seen <- event
		}
	}
	inf, err := informer.New(informer.Options[*v1.ConfigMap]{
		Name:          "configmaps",
		ListerWatcher: listwatch.FromTypedClient(cms, nil),
		Handlers: informer.Handlers[*v1.ConfigMap]{
			OnAdd:    func(c *v1.ConfigMap) { see("add " + c.Name) },
			OnUpdate: func(_, c *v1.ConfigMap) { see("update " + c.Name + " " + c.Data["k"]) },
			OnDelete: func(c *v1.ConfigMap) { see("delete " + c.Name) },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(runCtx) })
	defer func() { cancel(); wg.Wait() }()
	<-inf.Synced()
	// The first list is at resourceVersion 0, "any": served from the watch
	// cache, it may not have the configmap created just before; the
	// informer must have it once the cache does.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := inf.Store().Get(ns.Name + "/before"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("listed configmap not in the cache")
		}
	}
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Update(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}, Data: map[string]string{"k": "v"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"add before", "add after", "update after v", "delete before"} {
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("handler saw %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %q", want)
		}
	}
}
