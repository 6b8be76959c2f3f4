package agent

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kite-project/kite/agent/kubetypes"
)

// observing is a SyncLoop that drains its operations and records the mirror
// pods the Agent gives it.
type observing struct {
	mu      sync.Mutex
	mirrors []*v1.Pod
	leaked  bool // a mirror pod came as an operation
}

func (o *observing) Run(_ context.Context, updates <-chan kubetypes.PodUpdate, _ SourcesSeen) {
	for u := range updates {
		for _, p := range u.Pods {
			if kubetypes.IsMirrorPod(p) {
				o.mu.Lock()
				o.leaked = true
				o.mu.Unlock()
			}
		}
	}
}

func (o *observing) ObserveMirror(mirror *v1.Pod) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.mirrors = append(o.mirrors, mirror)
}

func (o *observing) seen(uid string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, m := range o.mirrors {
		if string(m.UID) == uid {
			return true
		}
	}
	return false
}

// TestSyncLoopIsGivenTheMirrorPodsItWants: the mirror pods that the api
// source sees are kept from the sync loop's operations but handed to a
// SyncLoop that asks for them (the pod manager writes a static pod's status
// through its mirror, at once rather than at its next retry).
func TestSyncLoopIsGivenTheMirrorPodsItWants(t *testing.T) {
	node := unique("observe-node")
	cfg := shared.RESTConfig()
	cs := clientset(t, cfg)
	createNode(t, cs, node)
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "web.yaml"), manifest("web", "image"))
	o := &observing{}
	a, err := New(Options{NodeName: node, RESTConfig: cfg, StaticPodPath: dir, SyncLoop: o,
		MirrorRetryInitial: 50 * time.Millisecond, MirrorRetryMax: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { a.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	m := waitAPIPod(t, cs, "default", "web-"+node, "mirror created", func(p *v1.Pod) bool {
		return p != nil && kubetypes.IsMirrorPod(p)
	})
	deadline := time.Now().Add(20 * time.Second)
	for !o.seen(string(m.UID)) {
		if time.Now().After(deadline) {
			t.Fatalf("the sync loop was never given mirror pod %s", m.UID)
		}
		time.Sleep(20 * time.Millisecond) // polling, not synchronisation
	}
	cancel()
	wg.Wait()
	if o.leaked {
		t.Error("a mirror pod reached the sync loop's operations")
	}
}
