package nodeevents_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/agent/kubetypes"
	"github.com/kite-project/kite/agent/nodeevents"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestProblemsBecomeWarningEventsOnTheNode runs the recorder against a real
// Kite and checks what `kubectl get events --field-selector
// involvedObject.kind=Node` would list: one Warning per problem, and a
// repeat bumps the count of the same Event.
func TestProblemsBecomeWarningEventsOnTheNode(t *testing.T) {
	srv, err := kite.Start(t.Context(), kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	rec, err := nodeevents.New(nodeevents.Options{Client: cs.CoreV1(), NodeName: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { rec.Run(ctx) })
	defer wg.Wait()
	defer cancel()

	bad := kubetypes.Problem{Source: "file", Reason: kubetypes.ReasonFailedToParse, Where: "/etc/kite/manifests/web.yaml", Err: errors.New("yaml: line 3: mapping values are not allowed")}
	dup := kubetypes.Problem{Source: "file", Reason: kubetypes.ReasonDuplicatePod, Where: "/etc/kite/manifests/b.yaml", Err: errors.New("pod web-node-a is also defined in a.yaml")}
	rec.ReportProblem(bad)
	rec.ReportProblem(dup)
	rec.ReportProblem(bad)

	sel := fields.Set{"involvedObject.kind": "Node", "involvedObject.name": "node-a"}.AsSelector().String()
	var events []v1.Event
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := cs.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		events = list.Items
		total := int32(0)
		for _, e := range events {
			total += e.Count
		}
		if total == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	counts := map[string]int32{}
	for _, e := range events {
		if e.Type != v1.EventTypeWarning || e.Source.Component != "kubelet" || e.ReportingController != "kubelet" || e.InvolvedObject.Name != "node-a" {
			t.Errorf("event %s: type %q, source %q, object %v", e.Name, e.Type, e.Source.Component, e.InvolvedObject)
		}
		counts[e.Reason] = e.Count
	}
	if len(events) != 2 || counts[kubetypes.ReasonFailedToParse] != 2 || counts[kubetypes.ReasonDuplicatePod] != 1 {
		t.Fatalf("events by reason: %v (%d objects), want FailedToParse x2 and DuplicatePod x1 in 2 objects", counts, len(events))
	}
}

// TestReportProblemNeverBlocks checks that a recorder nobody runs (an API
// server that never answers) does not stall the source that reports.
func TestReportProblemNeverBlocks(t *testing.T) {
	rec, err := nodeevents.New(nodeevents.Options{Client: kubernetes.NewForConfigOrDie(&rest0).CoreV1(), NodeName: "n"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 1000; i++ {
			rec.ReportProblem(kubetypes.Problem{Source: "http", Reason: kubetypes.ReasonFailedToRead, Err: errors.New("refused")})
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("ReportProblem blocked with a full queue")
	}
}

// rest0 points at a port nothing listens on; the test never runs the recorder.
var rest0 = rest.Config{Host: "http://127.0.0.1:1"}
