package api

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/kitetest"
)

// An API server restarted under the source (same data directory, same
// port) never empties the set, and pods bound after it is back arrive.
// The time they take is logged, not asserted (the machine may be loaded):
// usually well under a second.
func TestAPIServerRestartKeepsThePodsAndRecovers(t *testing.T) {
	const node = "restart-node"
	srv := kitetest.StartRestartable(t)
	cfg := srv.Server().RESTConfig() // the CA and token live in the data directory
	ctx := t.Context()
	cs := clientset(t, cfg)
	if _, err := cs.CoreV1().Pods("default").Create(ctx, newPod("default", "before", node, "image"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := runSource(t, cfg, node)
	s.expect("default/before")

	want := []string{"default/before"}
	// Down for a while, then restarted at once: a client that has not
	// noticed yet meets its dead connection rather than a refusal.
	for round, down := range []time.Duration{2 * time.Second, 0, 0} {
		srv.Stop()
		// Nothing may be sent while the server is down: no empty SET.
		s.quiet(down)
		srv.Start()
		back := time.Now()
		name := fmt.Sprintf("after-%d", round)
		if _, err := cs.CoreV1().Pods("default").Create(ctx, newPod("default", name, node, "image"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("round %d: create %s: %v", round, name, err)
		}
		want = append(want, "default/"+name)
		s.expect(want...)
		t.Logf("round %d: pod bound %v after the server was back arrived", round, time.Since(back).Round(time.Millisecond))
	}
	// The first list, at resourceVersion "0", may come from a watch cache
	// still catching up; once the pod was there, it must stay.
	had := false
	for i, set := range s.history {
		switch in := slices.Contains(set, "default/before"); {
		case in:
			had = true
		case had:
			t.Errorf("SET %d of %d lost the pod bound before the restarts: %v", i, len(s.history), set)
		}
	}
}
