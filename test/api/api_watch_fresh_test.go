package api_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// TestPlainWatchStartsWhileAWatchServedByEtcdIsOpen: a plain watch, with
// no resourceVersion, of a resource whose cache is behind etcd (others
// were written since its last change), while a watch that etcd serves
// (events are not cached) is open from etcd's next revision and nothing
// is written. The API server makes the plain watch one with initial
// events at least as new as etcd's revision (as upstream's, with
// WatchList on), so the cache must catch up by a progress notification.
// When every etcd watch shared one gRPC stream, etcd answered no progress
// request while the events watch waited for its first revision: the
// watch failed after 3 s with ERROR 504 "Too large resource version"
// (TestDeletedCRDGoesAfterItsCustomResources once, where the blocking
// watch was a new custom resource's cache listing after the last write).
// Each cache now watches on its own stream (docs/watchcache.md).
func TestPlainWatchStartsWhileAWatchServedByEtcdIsOpen(t *testing.T) {
	ctx, cancel := contextWithTimeout(t, 60*time.Second)
	defer cancel()
	client := kubernetes.NewForConfigOrDie(config(t))
	ns := newNamespace(t, client)
	// The serviceaccount controller writes once into a new namespace:
	// let that write come first.
	for {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Namespaces are behind etcd by this write.
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	events, err := client.CoreV1().Events(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Stop()

	w, err := client.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + ns})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added {
			t.Fatalf("first event %s %v, want ADDED %s", ev.Type, ev.Object, ns)
		}
		if got := ev.Object.(*v1.Namespace).Name; got != ns {
			t.Fatalf("first event ADDED %s, want %s", got, ns)
		}
	case <-ctx.Done():
		t.Fatal("no event")
	}
}
