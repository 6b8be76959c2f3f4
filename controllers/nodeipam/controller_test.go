package nodeipam_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/nodeipam"
)

// TestNodesGetDistinctPodCIDRsAcrossRestartsAndDeletes: against the real
// API server, with a range of two /24 blocks: two nodes get distinct
// blocks of the range (podCIDR and podCIDRs); a controller started again
// rebuilds what is in use from the nodes, so a third node gets nothing but
// upstream's CIDRNotAvailable event, and once a node is deleted its block
// goes to the waiting node. No node's podCIDR ever changes.
func TestNodesGetDistinctPodCIDRsAcrossRestartsAndDeletes(t *testing.T) {
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	start := func() (*nodeipam.Controller, func()) {
		c, err := nodeipam.New(nodeipam.Options{Client: cs, ClusterCIDRs: []string{"10.200.0.0/23"}, NodeCIDRMaskSize: 24})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { c.Run(runCtx) })
		return c, func() { cancel(); wg.Wait() }
	}
	createNode := func(name string) {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	podCIDR := func(name string) string {
		t.Helper()
		var got string
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if n.Spec.PodCIDR != "" && (len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDRs[0] != n.Spec.PodCIDR) {
				t.Fatalf("node %s: podCIDR %q, podCIDRs %q; want one and the same", name, n.Spec.PodCIDR, n.Spec.PodCIDRs)
			}
			got = n.Spec.PodCIDR
			return got != "", nil
		}); err != nil {
			t.Fatalf("node %s got no podCIDR: %v", name, err)
		}
		return got
	}

	c, stop := start()
	createNode("ipam-a")
	createNode("ipam-b")
	a, b := podCIDR("ipam-a"), podCIDR("ipam-b")
	inRange := map[string]bool{"10.200.0.0/24": true, "10.200.1.0/24": true}
	if a == b || !inRange[a] || !inRange[b] {
		t.Fatalf("podCIDRs %s and %s; want the two distinct /24s of 10.200.0.0/23", a, b)
	}
	if err := c.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	stop()

	c, stop = start()
	defer stop()
	createNode("ipam-c")
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=ipam-c,reason=" + nodeipam.ReasonCIDRNotAvailable})
		return err == nil && len(evs.Items) > 0 && evs.Items[0].Message == "Node ipam-c status is now: CIDRNotAvailable", err
	}); err != nil {
		t.Fatalf("no CIDRNotAvailable event for the node past a full range: %v", err)
	}
	if n, _ := cs.CoreV1().Nodes().Get(ctx, "ipam-c", metav1.GetOptions{}); n.Spec.PodCIDR != "" {
		t.Fatalf("node ipam-c got %s from a full range: the restarted controller handed out a block in use", n.Spec.PodCIDR)
	}
	if err := cs.CoreV1().Nodes().Delete(ctx, "ipam-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := podCIDR("ipam-c"); got != a {
		t.Fatalf("node ipam-c got %s; want %s, released by the deleted node", got, a)
	}
	if got := podCIDR("ipam-b"); got != b {
		t.Fatalf("node ipam-b's podCIDR changed from %s to %s", b, got)
	}
	if err := c.WaitIdle(ctx); err != nil && !strings.Contains(err.Error(), "context") {
		t.Fatal(err)
	}
}
