package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/agent/kubetypes"
)

// waitTimeout is generous: the machine running the tests may be loaded.
const waitTimeout = 20 * time.Second

// unique returns base with a suffix of its own, so that tests run again
// (-count) against the shared server do not meet their earlier objects.
func unique(base string) string {
	return fmt.Sprintf("%s-%x", base, time.Now().UnixNano()&0xffffffffff)
}

func clientset(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// ensureNode registers a Node object named name.
func ensureNode(t *testing.T, cs kubernetes.Interface, name string) *v1.Node {
	t.Helper()
	node, err := cs.CoreV1().Nodes().Create(t.Context(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("register node %s: %v", name, err)
	}
	return node
}

// runReconciler runs a Reconciler for node until the test ends.
func runReconciler(t *testing.T, cs kubernetes.Interface, node string) *Reconciler {
	t.Helper()
	r, err := New(Options{Client: cs.CoreV1(), NodeName: node, RetryInitial: 50 * time.Millisecond, RetryMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, logCtx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(logCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

// waitMirror polls the API until the pod named after s satisfies ok (nil
// when it does not exist), and returns it.
func waitMirror(t *testing.T, cs kubernetes.Interface, s *v1.Pod, what string, ok func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		p, err := cs.CoreV1().Pods(s.Namespace).Get(t.Context(), s.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			p, err = nil, nil
		}
		if err != nil {
			t.Fatalf("get %s/%s: %v", s.Namespace, s.Name, err)
		}
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; pod is %v", what, waitTimeout, p)
		}
		time.Sleep(20 * time.Millisecond) // polling, not synchronisation
	}
}

func mirrors(hash string) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		return p != nil && p.DeletionTimestamp == nil && p.Annotations[kubetypes.ConfigMirrorAnnotationKey] == hash
	}
}

func TestNewRefusesIncompleteOptions(t *testing.T) {
	cs := clientset(t)
	for name, opts := range map[string]Options{
		"no client":      {NodeName: "n"},
		"no node":        {Client: cs.CoreV1()},
		"negative retry": {Client: cs.CoreV1(), NodeName: "n", RetryInitial: -time.Second},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New accepted the options", name)
		}
	}
}

// The whole life of a mirror pod against a real API server: created with
// the hash annotation and the Node as owner, replaced when out of date,
// deleted at once and created again when deleted through the API, deleted
// when its static pod goes.
func TestReconcilerKeepsTheMirrorPodInStep(t *testing.T) {
	cs := clientset(t)
	nodeName := unique("node")
	node := ensureNode(t, cs, nodeName)
	r := runReconciler(t, cs, nodeName)

	name := unique("life")
	v1pod := static(name, "hash-1")
	r.Set(Input{Static: []*v1.Pod{v1pod}, APISeen: true, StaticSeen: true})
	m := waitMirror(t, cs, v1pod, "mirror created", mirrors("hash-1"))
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].UID != node.UID || m.OwnerReferences[0].Kind != "Node" {
		t.Fatalf("mirror ownerReferences = %+v, want the Node %s (uid %s)", m.OwnerReferences, node.Name, node.UID)
	}

	// Edited manifest: a new hash. The old mirror is replaced.
	v2pod := static(name, "hash-2")
	r.Set(Input{Static: []*v1.Pod{v2pod}, Mirrors: []*v1.Pod{m}, APISeen: true, StaticSeen: true})
	m2 := waitMirror(t, cs, v2pod, "outdated mirror replaced", mirrors("hash-2"))
	if m2.UID == m.UID {
		t.Fatal("the outdated mirror was updated in place; want delete and create")
	}

	// kubectl delete of the mirror: graceful, so it is terminating.
	if err := cs.CoreV1().Pods(m2.Namespace).Delete(t.Context(), m2.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	dying := waitMirror(t, cs, v2pod, "mirror terminating", func(p *v1.Pod) bool { return p != nil && p.DeletionTimestamp != nil })
	r.Set(Input{Static: []*v1.Pod{v2pod}, Mirrors: []*v1.Pod{dying}, APISeen: true, StaticSeen: true})
	m3 := waitMirror(t, cs, v2pod, "terminating mirror recreated", func(p *v1.Pod) bool { return mirrors("hash-2")(p) && p.UID != m2.UID })

	// Static pod gone: its mirror goes.
	r.Set(Input{Mirrors: []*v1.Pod{m3}, APISeen: true, StaticSeen: true})
	waitMirror(t, cs, v2pod, "orphaned mirror deleted", func(p *v1.Pod) bool { return p == nil })
}

// Mirror pods need their Node's UID: without a Node object nothing is
// created, and the Reconciler retries until the Node is registered.
func TestReconcilerWaitsForTheNode(t *testing.T) {
	cs := clientset(t)
	nodeName := unique("late-node")
	r := runReconciler(t, cs, nodeName)
	s := static(unique("late"), "hash-late")
	r.Set(Input{Static: []*v1.Pod{s}, APISeen: true, StaticSeen: true})
	time.Sleep(300 * time.Millisecond) // several retries' worth: none may create
	if _, err := cs.CoreV1().Pods(s.Namespace).Get(t.Context(), s.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("mirror created without a Node object (err %v)", err)
	}
	node := ensureNode(t, cs, nodeName)
	m := waitMirror(t, cs, s, "mirror created once the node exists", mirrors("hash-late"))
	if m.OwnerReferences[0].UID != node.UID {
		t.Fatalf("owner UID %s, want the node's %s", m.OwnerReferences[0].UID, node.UID)
	}
}
