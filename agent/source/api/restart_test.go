package api

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite"
)

// restartable is a Kite server that can be stopped and started again on
// the same data directory and port, as an API server restarted under the
// agent.
type restartable struct {
	t    *testing.T
	opts kite.Options
	srv  *kite.Server
}

func startRestartable(t *testing.T) *restartable {
	t.Helper()
	r := &restartable{t: t, opts: kite.Options{DataDir: t.TempDir(), EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"}}
	r.start()
	u, err := url.Parse(r.srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	// Start again on the port the first start picked.
	if r.opts.SecurePort, err = strconv.Atoi(u.Port()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.stop)
	return r
}

func (r *restartable) start() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := kite.Start(ctx, r.opts)
	if err != nil {
		r.t.Fatalf("start kite on %s port %d: %v", r.opts.DataDir, r.opts.SecurePort, err)
	}
	r.srv = srv
}

func (r *restartable) stop() {
	if r.srv == nil {
		return
	}
	if err := r.srv.Close(); err != nil {
		r.t.Errorf("close kite: %v", err)
	}
	r.srv = nil
}

// An API server restarted under the source (same data directory, same
// port) never empties the set, and pods bound after it is back arrive.
// The time they take is logged, not asserted (the machine may be loaded):
// usually well under a second.
func TestAPIServerRestartKeepsThePodsAndRecovers(t *testing.T) {
	const node = "restart-node"
	srv := startRestartable(t)
	cfg := srv.srv.RESTConfig() // the CA and token live in the data directory
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
		srv.stop()
		// Nothing may be sent while the server is down: no empty SET.
		s.quiet(down)
		srv.start()
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
