package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/kitetest"
)

// An API server restarted under the agent (same data directory and port):
// nothing is removed, the static pod's mirror is left as it was, and pods
// bound after the server is back arrive.
func TestAPIServerRestartedUnderTheAgent(t *testing.T) {
	const node = "restart-node"
	srv := kitetest.StartRestartable(t)
	cfg := srv.Server().RESTConfig() // the CA and token live in the data directory
	cs := clientset(t, cfg)
	createNode(t, cs, node)
	if _, err := cs.CoreV1().Pods("default").Create(context.Background(), newPod("default", "before", node), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "static.yaml"), manifest("static", "image"))
	_, c := startAgent(t, Options{NodeName: node, RESTConfig: cfg, StaticPodPath: dir})
	c.wait(0, kubetypes.ADD, kubetypes.APISource, "default/before")
	static, _ := c.wait(0, kubetypes.ADD, kubetypes.FileSource, "default/static-"+node)
	hash := static.Annotations[kubetypes.ConfigHashAnnotationKey]
	m := waitAPIPod(t, cs, "default", "static-"+node, "mirror created", func(p *v1.Pod) bool {
		return p != nil && p.Annotations[kubetypes.ConfigMirrorAnnotationKey] == hash
	})

	for round := range 2 {
		srv.Stop()
		time.Sleep(2 * time.Second) // the server stays down a while: the scenario, not synchronisation
		srv.Start()
		back := time.Now()
		name := fmt.Sprintf("after-%d", round)
		if _, err := cs.CoreV1().Pods("default").Create(context.Background(), newPod("default", name, node), metav1.CreateOptions{}); err != nil {
			t.Fatalf("round %d: create %s: %v", round, name, err)
		}
		c.wait(0, kubetypes.ADD, kubetypes.APISource, "default/"+name)
		t.Logf("round %d: pod bound after the server was back arrived as ADD %v later", round, time.Since(back).Round(time.Millisecond))
	}

	c.none("a pod was removed or deleted across the restarts", func(u kubetypes.PodUpdate, _ *v1.Pod) bool {
		return u.Op == kubetypes.REMOVE || u.Op == kubetypes.DELETE
	})
	after, err := cs.CoreV1().Pods("default").Get(context.Background(), "static-"+node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != m.UID {
		t.Fatalf("mirror pod replaced across the restarts (uid %s → %s); want it left alone", m.UID, after.UID)
	}
}
