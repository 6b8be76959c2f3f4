package garbagecollector_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"

	"github.com/kite-project/kite/controllers/garbagecollector"
)

// start runs a collector against the shared Kite until the test ends.
func start(t *testing.T) (kubernetes.Interface, *garbagecollector.Controller) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	gc, err := garbagecollector.New(garbagecollector.Options{Metadata: metadata.NewForConfigOrDie(srv.RESTConfig()), Discovery: cs.Discovery()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { gc.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return cs, gc
}

func namespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func configMap(t *testing.T, cs kubernetes.Interface, ns, name string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func ownedBy(kind, name string, uid types.UID, block bool) metav1.OwnerReference {
	apiVersion := "v1"
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, BlockOwnerDeletion: ptr.To(block)}
}

func eventually(t *testing.T, what string, f func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 15*time.Second, true, f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func cmGone(cs kubernetes.Interface, ns, name string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
}

func TestBackgroundDeletesDependentsAfterTheOwner(t *testing.T) {
	cs, _ := start(t)
	ns := namespace(t, cs)
	owner := configMap(t, cs, ns, "owner")
	child := configMap(t, cs, ns, "child", ownedBy("ConfigMap", "owner", owner.UID, false))
	configMap(t, cs, ns, "grandchild", ownedBy("ConfigMap", "child", child.UID, false))
	bg := metav1.DeletePropagationBackground
	if err := cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), "owner", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "child collected", cmGone(cs, ns, "child"))
	eventually(t, "grandchild collected after the child", cmGone(cs, ns, "grandchild"))
}

func TestAbsentOwnerAndUIDMismatch(t *testing.T) {
	cs, gc := start(t)
	ns := namespace(t, cs)
	other := configMap(t, cs, ns, "real")
	configMap(t, cs, ns, "stale", ownedBy("ConfigMap", "real", "not-its-uid", false))
	configMap(t, cs, ns, "kept", ownedBy("ConfigMap", "real", other.UID, false))
	configMap(t, cs, ns, "two-owners", ownedBy("ConfigMap", "real", other.UID, false), ownedBy("ConfigMap", "missing", "gone-uid", false))
	eventually(t, "dependent of a uid that differs collected", cmGone(cs, ns, "stale"))
	if err := gc.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("dependent of a present owner: %v", err)
	}
	eventually(t, "the absent owner's reference removed, the object kept", func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "two-owners", metav1.GetOptions{})
		return err == nil && len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == other.UID, err
	})
}

func TestClusterScopedOwner(t *testing.T) {
	cs, _ := start(t)
	ns := namespace(t, cs)
	owner, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-owner-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	configMap(t, cs, ns, "owned-by-namespace", ownedBy("Namespace", owner.Name, owner.UID, false))
	node, err := cs.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "gc-node-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	configMap(t, cs, ns, "owned-by-node", ownedBy("Node", node.Name, node.UID, false))
	if err := cs.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "dependent of a deleted node collected", cmGone(cs, ns, "owned-by-node"))
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "owned-by-namespace", metav1.GetOptions{}); err != nil {
		t.Errorf("dependent of a live cluster-scoped owner: %v", err)
	}
}

func TestOrphanKeepsDependents(t *testing.T) {
	cs, _ := start(t)
	ns := namespace(t, cs)
	owner := configMap(t, cs, ns, "owner")
	configMap(t, cs, ns, "orphan", ownedBy("ConfigMap", "owner", owner.UID, true))
	orphan := metav1.DeletePropagationOrphan
	if err := cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), "owner", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "owner gone once orphaning is done", cmGone(cs, ns, "owner"))
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "orphan", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("orphaned dependent: %v", err)
	}
	if len(cm.OwnerReferences) != 0 {
		t.Errorf("orphan still references %v", cm.OwnerReferences)
	}
}

func TestForegroundWaitsForBlockingDependents(t *testing.T) {
	cs, _ := start(t)
	ns := namespace(t, cs)
	owner := configMap(t, cs, ns, "owner")
	child := configMap(t, cs, ns, "child", ownedBy("ConfigMap", "owner", owner.UID, true))
	// The child is held by a finalizer of its own, so the owner must wait.
	child.Finalizers = []string{"example.com/hold"}
	child, err := cs.CoreV1().ConfigMaps(ns).Update(context.Background(), child, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fg := metav1.DeletePropagationForeground
	if err := cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), "owner", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "child marked deleted", func(ctx context.Context) (bool, error) {
		c, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "child", metav1.GetOptions{})
		return err == nil && c.DeletionTimestamp != nil, err
	})
	o, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "owner", metav1.GetOptions{})
	if err != nil || o.DeletionTimestamp == nil || !slices.Contains(o.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Fatalf("owner while its dependent remains: %v %+v", err, o)
	}
	c, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "child", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Finalizers = nil
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "owner gone after its blocking dependent", cmGone(cs, ns, "owner"))
}

func TestForegroundCycleEnds(t *testing.T) {
	cs, _ := start(t)
	ns := namespace(t, cs)
	a := configMap(t, cs, ns, "a")
	b := configMap(t, cs, ns, "b", ownedBy("ConfigMap", "a", a.UID, true))
	a.OwnerReferences = []metav1.OwnerReference{ownedBy("ConfigMap", "b", b.UID, true)}
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(context.Background(), a, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fg := metav1.DeletePropagationForeground
	if err := cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), "a", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a gone", cmGone(cs, ns, "a"))
	eventually(t, "b gone", cmGone(cs, ns, "b"))
}

// TestManyOwnersDeletedAtOnceLeaveNothing: 1 000 owners, each with two
// dependents (one blocking its owner's deletion, one not), deleted at
// once by one DeleteCollection in the background: every dependent is
// collected and nothing is left behind.
func TestManyOwnersDeletedAtOnceLeaveNothing(t *testing.T) {
	cs, gc := start(t)
	ns := namespace(t, cs)
	const owners = 1000
	began := time.Now()
	if err := inParallel(owners, func(i int) error { return ownerWithDependents(cs, ns, i) }); err != nil {
		t.Fatal(err)
	}
	created := time.Since(began)
	if err := gc.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), notRootCA())
	if err != nil || len(l.Items) != 3*owners {
		t.Fatalf("before the delete: %d config maps (%v), want %d: the collector took some", len(l.Items), err, 3*owners)
	}
	deleted := time.Now()
	bg := metav1.DeletePropagationBackground
	if err := cs.CoreV1().ConfigMaps(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{PropagationPolicy: &bg},
		metav1.ListOptions{LabelSelector: "role=owner"}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, notRootCA())
		return err == nil && len(l.Items) == 0, err
	}); err != nil {
		l, _ := cs.CoreV1().ConfigMaps(ns).List(context.Background(), notRootCA())
		t.Fatalf("%d config maps left %v after the delete: %v", len(l.Items), time.Since(deleted), err)
	}
	t.Logf("%d owners and %d dependents created in %v; all collected %v after the delete", owners, 2*owners, created, time.Since(deleted))
}

// ownerWithDependents creates owner-i and its dependents: dep-i blocks
// the owner's deletion, loose-i does not.
func ownerWithDependents(cs kubernetes.Interface, ns string, i int) error {
	ctx := context.Background()
	o, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("owner-%d", i), Labels: map[string]string{"role": "owner"}}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	for name, block := range map[string]bool{fmt.Sprintf("dep-%d", i): true, fmt.Sprintf("loose-%d", i): false} {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: name, OwnerReferences: []metav1.OwnerReference{ownedBy("ConfigMap", o.Name, o.UID, block)}}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
	}
	return nil
}

// inParallel calls f(0) ... f(n-1) from 16 goroutines and returns the
// first error; each goroutine stops at its first.
func inParallel(n int, f func(i int) error) error {
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// notRootCA lists a namespace's ConfigMaps but the root CA publisher's
// kube-root-ca.crt (the embedded default runs it), which the test did not make.
func notRootCA() metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: "metadata.name!=kube-root-ca.crt"}
}
