package api

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNewRefusesIncompleteOptions(t *testing.T) {
	client := clientset(t, shared.RESTConfig()).CoreV1().RESTClient()
	tests := []struct {
		name string
		opts Options
	}{
		{"no client", Options{NodeName: "n"}},
		{"no node", Options{Client: client}},
		{"negative refused wait", Options{Client: client, NodeName: "n", RefusedMaxWait: -time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.opts); err == nil {
				t.Fatal("New accepted the options")
			}
		})
	}
}

// Upstream's TestNewSourceApiserverInitialEmptySendsEmptyPodUpdate: a node
// without pods still reports, so that the merge marks the source seen.
func TestInitialEmptyListSendsEmptySet(t *testing.T) {
	s := runSource(t, shared.RESTConfig(), unique("empty-node"))
	if u := s.expect(); u.Pods == nil {
		t.Fatal("the first SET has nil pods; want an empty set")
	}
}

// Upstream's TestNewSourceApiserver_UpdatesAndMultiplePods: add, modify and
// delete each send the whole set.
func TestUpdatesAndMultiplePodsSendTheWholeSet(t *testing.T) {
	node := unique("multi-node")
	cs := clientset(t, shared.RESTConfig())
	ctx := t.Context()
	ns := createNamespace(t, cs, "multi")
	pods := cs.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, newPod(ns, "p", node, "image/one"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := runSource(t, shared.RESTConfig(), node)
	s.expect(ns + "/p")

	if _, err := pods.Create(ctx, newPod(ns, "q", node, "image/blah"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.expect(ns+"/p", ns+"/q")

	p, err := pods.Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Containers[0].Image = "image/two"
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := s.expect(ns+"/p", ns+"/q")
	if got := find(u, ns+"/p").Spec.Containers[0].Image; got != "image/two" {
		t.Fatalf("image of p after the update = %q, want image/two", got)
	}

	zero := int64(0)
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	s.expect(ns + "/q")
	if err := pods.Delete(ctx, "q", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	s.expect()
}

// Upstream's TestNewSourceApiserver_TwoNamespacesSameName (regression test
// for kubernetes/kubernetes#2294): pods are keyed by namespace and name.
func TestTwoNamespacesSameNameAreTwoPods(t *testing.T) {
	node := unique("twons-node")
	cs := clientset(t, shared.RESTConfig())
	ctx := t.Context()
	one, two := createNamespace(t, cs, "twons-one"), createNamespace(t, cs, "twons-two")
	for _, ns := range []string{one, two} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, newPod(ns, "p", node, "image"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s := runSource(t, shared.RESTConfig(), node)
	s.expect(one+"/p", two+"/p")
	zero := int64(0)
	if err := cs.CoreV1().Pods(one).Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	s.expect(two + "/p")
}

// Only pods bound to the node arrive: not unbound ones, not other nodes',
// and a pod bound later through the binding subresource arrives then.
func TestOnlyPodsBoundToTheNodeArrive(t *testing.T) {
	node := unique("bound-node")
	cs := clientset(t, shared.RESTConfig())
	ctx := t.Context()
	ns := createNamespace(t, cs, "bound")
	pods := cs.CoreV1().Pods(ns)
	for _, p := range []*v1.Pod{
		newPod(ns, "mine", node, "image"),
		newPod(ns, "theirs", "other-node", "image"),
		newPod(ns, "unbound", "", "image"),
	} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s := runSource(t, shared.RESTConfig(), node)
	s.expect(ns + "/mine")

	if _, err := pods.Create(ctx, newPod(ns, "theirs-later", "other-node", "image"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unbound"},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := pods.Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("bind: %v", err)
	}
	u := s.expect(ns+"/mine", ns+"/unbound")
	if got := find(u, ns+"/unbound").Spec.NodeName; got != node {
		t.Fatalf("bound pod's nodeName = %q, want %q", got, node)
	}
}

// A graceful delete first shows the pod with a deletionTimestamp (the merge
// turns it into DELETE), and the pod leaves the set only when it is gone.
func TestGracefulDeleteShowsTheDeletionTimestampFirst(t *testing.T) {
	node := unique("graceful-node")
	cs := clientset(t, shared.RESTConfig())
	ctx := t.Context()
	ns := createNamespace(t, cs, "graceful")
	pods := cs.CoreV1().Pods(ns)
	if _, err := pods.Create(ctx, newPod(ns, "p", node, "image"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := runSource(t, shared.RESTConfig(), node)
	s.expect(ns + "/p")

	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	u := s.expect(ns + "/p")
	if find(u, ns+"/p").DeletionTimestamp == nil {
		t.Fatal("pod being deleted has no deletionTimestamp")
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	s.expect()
}
