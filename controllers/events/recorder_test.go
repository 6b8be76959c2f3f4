package events_test

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/kitetest"
)

var srv *kite.Server

func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { srv = s }) }

func TestRepeatsRaiseTheCount(t *testing.T) {
	cs, err := kubernetes.NewForConfig(srv.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ev-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "p", UID: "uid-1"}}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-2"}}
	r := events.New(events.Options{Client: cs, Component: "test-controller"})
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(runCtx) })
	defer func() { cancel(); wg.Wait() }()

	r.Event(pod, "Pod", v1.EventTypeWarning, "FailedScheduling", "no room")
	r.Event(pod, "Pod", v1.EventTypeWarning, "FailedScheduling", "no room")
	r.Event(pod, "Pod", v1.EventTypeWarning, "FailedScheduling", "still no room")
	r.Event(node, "Node", v1.EventTypeNormal, "NodeNotReady", "Node n1 status is now: NodeNotReady")

	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) < 2 {
			return false, err
		}
		counts := map[string]int32{}
		for _, e := range list.Items {
			if e.InvolvedObject.Name != "p" || e.InvolvedObject.Kind != "Pod" || e.Source.Component != "test-controller" || e.ReportingController != "test-controller" {
				t.Fatalf("event %+v", e)
			}
			counts[e.Message] = e.Count
		}
		return len(list.Items) == 2 && counts["no room"] == 2 && counts["still no room"] == 1, nil
	})
	if err != nil {
		t.Fatalf("pod events: %v", err)
	}
	// Events of cluster-scoped objects go to the default namespace.
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "n1" && e.Reason == "NodeNotReady" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node event: %v", err)
	}
}
