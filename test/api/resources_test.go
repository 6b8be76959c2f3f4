package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/resourceset"
)

// TestResourceSetChangesWhileServing takes leases out of the served set
// and puts a newly built stack back, while the server serves: discovery,
// routes and the OpenAPI v3 document of coordination.k8s.io/v1 follow each
// change, and the removed stack's watch ends.
func TestResourceSetChangesWhileServing(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := kite.Start(ctx, kite.Options{EtcdUnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := kubernetes.NewForConfigOrDie(s.RESTConfig())
	dc := discovery.NewDiscoveryClientForConfigOrDie(s.RESTConfig())
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	served := func() (discovered bool, openAPI int) {
		t.Helper()
		_, lists, err := dc.ServerGroupsAndResources()
		if err != nil {
			t.Fatalf("discovery: %v", err)
		}
		for _, l := range lists {
			for _, r := range l.APIResources {
				if l.GroupVersion == "coordination.k8s.io/v1" && r.Name == "leases" {
					discovered = true
				}
			}
		}
		res := cs.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/coordination.k8s.io/v1").Do(ctx)
		var code int
		res.StatusCode(&code)
		return discovered, code
	}
	if d, code := served(); !d || code != http.StatusOK {
		t.Fatalf("before: leases discovered %v, openapi %d", d, code)
	}
	w, err := cs.CoordinationV1().Leases("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	strat := s.Resources().Store(leases.GroupResource().String()).Strategy()
	if err := s.Resources().Remove(leases); err != nil {
		t.Fatalf("remove: %v", err)
	}
	if d, code := served(); d || code != http.StatusNotFound {
		t.Errorf("after remove: leases discovered %v, openapi %d, want gone and 404", d, code)
	}
	if _, err := cs.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{}); err == nil {
		t.Errorf("list of removed leases succeeded")
	}
	select {
	case _, open := <-w.ResultChan():
		if open {
			// An error event before the close is fine; the close must follow.
			for range w.ResultChan() {
			}
		}
	case <-ctx.Done():
		t.Fatal("the watch on the removed stack did not end")
	}

	st, err := s.Resources().Builder().Build(ctx, strat, resourceset.StackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Resources().Add(st); err != nil {
		t.Fatalf("add: %v", err)
	}
	if err := s.Resources().Add(st); err == nil {
		t.Errorf("adding a served resource twice was accepted")
	}
	if d, code := served(); !d || code != http.StatusOK {
		t.Errorf("after add: leases discovered %v, openapi %d", d, code)
	}
	if err := st.Store.Storage().ReadinessCheck(); err != nil {
		for time.Sleep(5 * time.Millisecond); st.Store.Storage().ReadinessCheck() != nil && ctx.Err() == nil; time.Sleep(5 * time.Millisecond) {
		}
	}
	if _, err := cs.CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list of re-added leases: %v", err)
	}
}
