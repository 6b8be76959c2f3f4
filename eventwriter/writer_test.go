package eventwriter_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
	"github.com/kite-project/kite/eventwriter"
	"github.com/kite-project/kite/kitetest"
)

var srv *kite.Server

func TestMain(m *testing.M) { kitetest.Main(m, func(s *kite.Server) { srv = s }) }

// clock is a settable clock for the correlator's windows.
type clock struct{ nanos atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.nanos.Load()) }
func (c *clock) add(d time.Duration) { c.nanos.Add(int64(d)) }
func newClock() *clock               { c := &clock{}; c.nanos.Store(time.Now().UnixNano()); return c }
func (c *clock) event(ns, obj, reason, message string) *v1.Event {
	now := metav1.NewTime(c.now())
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", obj, now.UnixNano()), Namespace: ns},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: obj, UID: "uid-" + "obj"},
		Reason:         reason, Message: message, Type: v1.EventTypeWarning,
		Source:         v1.EventSource{Component: "test-controller"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "test-controller", ReportingInstance: "test-controller-h",
	}
}

// run starts a Writer against the shared server in a fresh namespace.
func run(t *testing.T, c *clock) (*eventwriter.Writer, kubernetes.Interface, string) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(srv.RESTConfig())
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ew-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := eventwriter.New(eventwriter.Options{Client: cs.CoreV1(), Now: c.now})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return w, cs, ns.Name
}

// settle waits until the namespace's events satisfy done, and returns them.
func settle(t *testing.T, cs kubernetes.Interface, ns string, done func([]v1.Event) bool) []v1.Event {
	t.Helper()
	var items []v1.Event
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		items = list.Items
		return done(items), nil
	})
	if err != nil {
		t.Fatalf("events in %s: %v; have %d: %v", ns, err, len(items), summary(items))
	}
	return items
}

func summary(items []v1.Event) []string {
	var out []string
	for _, e := range items {
		out = append(out, fmt.Sprintf("%s x%d %q", e.Reason, e.Count, e.Message))
	}
	return out
}

func TestRepeatsRaiseTheFirstEventsCount(t *testing.T) {
	c := newClock()
	w, cs, ns := run(t, c)
	for range 3 {
		w.Write(c.event(ns, "p", "BackOff", "Back-off restarting failed container"))
		c.add(time.Second)
	}
	w.Write(c.event(ns, "p", "Unhealthy", "Liveness probe failed"))
	items := settle(t, cs, ns, func(items []v1.Event) bool {
		total := int32(0)
		for _, e := range items {
			total += e.Count
		}
		return total == 4
	})
	if len(items) != 2 {
		t.Fatalf("events %v, want BackOff x3 and Unhealthy x1 as two objects", summary(items))
	}
	for _, e := range items {
		if e.Reason == "BackOff" && (e.Count != 3 || !e.LastTimestamp.After(e.FirstTimestamp.Time)) {
			t.Errorf("BackOff: count %d, first %v, last %v; want 3 with the last later", e.Count, e.FirstTimestamp, e.LastTimestamp)
		}
	}
}

// TestASourceBurstsTwentyFiveEventsPerObject is client-go's spam filter: a
// source writes at most 25 events about one object at once, then one per
// five minutes.
func TestASourceBurstsTwentyFiveEventsPerObject(t *testing.T) {
	c := newClock()
	w, cs, ns := run(t, c)
	for i := range 30 {
		w.Write(c.event(ns, "p", fmt.Sprintf("Reason%d", i), "m"))
		c.add(time.Millisecond) // events are named by their time
	}
	// Another object has its own budget.
	w.Write(c.event(ns, "q", "Other", "m"))
	settle(t, cs, ns, func(items []v1.Event) bool { return len(items) >= 26 })
	c.add(5 * time.Minute)
	w.Write(c.event(ns, "p", "AfterRefill", "m"))
	c.add(time.Millisecond)
	w.Write(c.event(ns, "p", "OverBudget", "m"))
	c.add(time.Millisecond)
	w.Write(c.event(ns, "q", "Marker", "m")) // written after the two above
	items := settle(t, cs, ns, func(items []v1.Event) bool {
		for _, e := range items {
			if e.Reason == "Marker" {
				return true
			}
		}
		return false
	})
	byReason := map[string]bool{}
	for _, e := range items {
		byReason[e.Reason] = true
	}
	if len(items) != 28 || !byReason["Reason24"] || byReason["Reason25"] || !byReason["AfterRefill"] || byReason["OverBudget"] {
		t.Fatalf("%d events %v: want Reason0..24 of p, one more after five minutes, and q's two", len(items), summary(items))
	}
}

// TestSimilarEventsAreCombined is client-go's aggregator: from the tenth
// event about one object with one reason and different messages within
// ten minutes, they are written as one combined event, whose count rises.
func TestSimilarEventsAreCombined(t *testing.T) {
	c := newClock()
	w, cs, ns := run(t, c)
	for i := range 12 {
		w.Write(c.event(ns, "p", "FailedMount", fmt.Sprintf("volume v%d not found", i)))
		c.add(time.Second)
	}
	items := settle(t, cs, ns, func(items []v1.Event) bool {
		total := int32(0)
		for _, e := range items {
			total += e.Count
		}
		return total == 12
	})
	combined := 0
	for _, e := range items {
		if strings.HasPrefix(e.Message, "(combined from similar events): ") {
			combined++
			if e.Count != 3 || e.Message != "(combined from similar events): volume v11 not found" {
				t.Errorf("combined event x%d %q, want x3 with the last message", e.Count, e.Message)
			}
		}
	}
	if len(items) != 10 || combined != 1 {
		t.Fatalf("events %v: want 9 as written and one combined", summary(items))
	}
}
