package listwatch

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// TestUndeltaStoreOverTypedClientNeverEmptiesWhileTheServerRestarts is the
// node agent's API source: a Reflector over the typed pods client with
// fieldSelector=spec.nodeName=<node>, into an UndeltaStore whose pushes
// are the agent's snapshots. An API server that goes away and comes back
// must never make the agent see its pods vanish.
func TestUndeltaStoreOverTypedClientNeverEmptiesWhileTheServerRestarts(t *testing.T) {
	s := newScriptedServer(t)
	s.add("ns", "mine", "n1")
	s.add("ns", "theirs", "n2")

	var mu sync.Mutex
	var pushes []map[string]string
	store := NewUndeltaStore(UndeltaOptions[*v1.Pod]{Push: func(pods []*v1.Pod) {
		snap := map[string]string{}
		for _, p := range pods {
			snap[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		mu.Lock()
		pushes = append(pushes, snap)
		mu.Unlock()
	}})
	selector := fields.OneTermEqualSelector("spec.nodeName", "n1")
	lw := FromTypedClient(s.clientset().CoreV1().Pods(""), func(o *metav1.ListOptions) {
		o.FieldSelector = selector.String()
	})
	r, err := NewReflector(Options{Name: "agent pods", ListerWatcher: lw, Store: store, ExpectedType: &v1.Pod{}, Backoff: testBackoff})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	last := func() map[string]string {
		mu.Lock()
		defer mu.Unlock()
		if len(pushes) == 0 {
			return nil
		}
		return pushes[len(pushes)-1]
	}
	settled := func(what string) {
		t.Helper()
		waitFor(t, what, func() bool {
			return maps.Equal(last(), s.state(selector)) && s.openWatches() > 0
		})
	}
	settled("the first snapshot")

	for range 2 {
		s.stop()
		s.add("ns", "new", "n1")
		s.restart()
		settled("the pod bound while the server was down")
		s.remove("ns", "new")
		settled("the pod deleted")
	}

	mu.Lock()
	defer mu.Unlock()
	for i, p := range pushes {
		if len(p) == 0 {
			t.Fatalf("push %d of %d was empty: %v", i, len(pushes), pushes)
		}
		if _, ok := p["ns/theirs"]; ok {
			t.Fatalf("push %d holds another node's pod: %v", i, p)
		}
	}
	for _, req := range s.log() {
		if !strings.Contains(req, "fieldSelector=spec.nodeName=n1") {
			t.Fatalf("request without the node's field selector: %q", req)
		}
	}
}
