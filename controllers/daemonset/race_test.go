package daemonset_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite/controllers/daemonset"
)

// TestDaemonSetDoesNotCreateTwiceWhenThePodsEventLandsMidSync: a sync that
// reads the pods' cache while the pod of the last sync's create is still
// on its way, and whose expectations are then satisfied by that pod's
// event before it decides, must not make the node a second pod (the
// expectations are read before the cache, as upstream's).
func TestDaemonSetDoesNotCreateTwiceWhenThePodsEventLandsMidSync(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ctx := context.Background()
	dc, err := daemonset.New(daemonset.Options{Client: cs})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ds-race-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node := ns.Name + "-n1"
	createNode(t, cs, node, ns.Name)
	key := ns.Name + "/agent"
	// The pod "the last sync created": made by the hook below, while the
	// sync under test sits between its cache read and its decision.
	// Only the test's own Sync below (marked by its context) runs it: a
	// worker's sync of the same key (a status write's event may requeue
	// it) once took it instead, and the test saw no pod.
	type ownSync struct{}
	var armed atomic.Bool
	var hookErr error
	daemonset.SetAfterList(dc, func(sctx context.Context) {
		if sctx.Value(ownSync{}) == nil || !armed.CompareAndSwap(true, false) {
			return
		}
		ds, err := cs.AppsV1().DaemonSets(ns.Name).Get(ctx, "agent", metav1.GetOptions{})
		var rev *appsv1.ControllerRevision
		if err == nil {
			rev, err = daemonset.NewRevision(ds, 1, new(int32))
		}
		if err == nil {
			hash := rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
			_, err = cs.CoreV1().Pods(ns.Name).Create(ctx, daemonset.NewPod(ds, node, hash), metav1.CreateOptions{})
		}
		if err != nil {
			hookErr = err
			return
		}
		deadline := time.Now().Add(10 * time.Second)
		for !daemonset.Satisfied(dc, key) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	})
	// One creation pending, so that the workers leave the set alone.
	daemonset.ExpectCreations(dc, key, 1)
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { dc.Run(rctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	// A finalizer keeps a second pod listed even once a later sync has
	// deleted it as extra.
	ds := newDaemonSet("agent", ns.Name)
	ds.Spec.Template.Finalizers = []string{"test.kite.dev/keep"}
	t.Cleanup(func() { releasePods(t, cs, ns.Name) })
	if _, err := cs.AppsV1().DaemonSets(ns.Name).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dc.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	// The sync under test needs the DaemonSet in the controller's cache
	// (WaitIdle may return before its event).
	for deadline := time.Now().Add(10 * time.Second); !daemonset.Known(dc, key); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the DaemonSet never reached the controller's cache")
		}
	}
	armed.Store(true)
	if err := daemonset.Sync(context.WithValue(ctx, ownSync{}, true), dc, key); err != nil {
		t.Fatal(err)
	}
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	pods, err := cs.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		t.Errorf("node %s has %d pods %v, want the one pod", node, len(pods.Items), names)
	}
}

// releasePods removes the finalizers of the namespace's pods.
func releasePods(t *testing.T, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	for _, p := range pods.Items {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
}
