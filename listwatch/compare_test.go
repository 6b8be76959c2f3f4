package listwatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
)

// testBackoff keeps the retries of the scenarios fast for both reflectors.
var testBackoff = BackoffOptions{Initial: 5 * time.Millisecond, Max: 40 * time.Millisecond}

// subject is one reflector implementation under test, running against a
// scripted server.
type subject struct {
	state  func() map[string]string // store content, key → resourceVersion
	lastRV func() string
	stop   func()
}

type subjectFunc func(t *testing.T, s *scriptedServer, sc scenario) subject

// runOurs starts our Reflector over a REST client of s.
func runOurs(t *testing.T, s *scriptedServer, sc scenario) subject {
	lw := FromRESTClient(s.clientset().CoreV1().RESTClient(), "pods", "", sc.selector)
	store := NewIndexer(IndexerOptions[*v1.Pod]{})
	r, err := NewReflector(Options{
		Name: "pods", ListerWatcher: lw, Store: store, ExpectedType: &v1.Pod{},
		Backoff: testBackoff, StreamingList: sc.streaming, PageSize: sc.pageSize,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	return subject{
		state: func() map[string]string {
			out := map[string]string{}
			for _, p := range store.List() {
				out[p.Namespace+"/"+p.Name] = p.ResourceVersion
			}
			return out
		},
		lastRV: r.LastSyncResourceVersion,
		stop:   func() { cancel(); <-done },
	}
}

// noWatchList makes client-go's Reflector list then watch, as ours does by
// default, instead of trying a streaming list first.
type noWatchList struct{ *cache.ListWatch }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// runClientGo starts client-go's tools/cache Reflector, the reference.
// Its streaming list (WatchListClient) is on by default in this version.
func runClientGo(t *testing.T, s *scriptedServer, sc scenario) subject {
	selector := sc.selector
	if selector == nil {
		selector = fields.Everything()
	}
	var lw cache.ListerWatcher = cache.NewListWatchFromClient(s.clientset().CoreV1().RESTClient(), "pods", "", selector)
	if !sc.streaming {
		lw = noWatchList{lw.(*cache.ListWatch)}
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflectorWithOptions(lw, &v1.Pod{}, store, cache.ReflectorOptions{
		Name:    "pods",
		Backoff: &wait.Backoff{Duration: testBackoff.Initial, Factor: 2, Jitter: 1, Cap: testBackoff.Max, Steps: 100},
	})
	r.WatchListPageSize = sc.pageSize
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.RunWithContext(ctx) }()
	return subject{
		state: func() map[string]string {
			out := map[string]string{}
			for _, o := range store.List() {
				p := o.(*v1.Pod)
				out[p.Namespace+"/"+p.Name] = p.ResourceVersion
			}
			return out
		},
		lastRV: r.LastSyncResourceVersion,
		stop:   func() { cancel(); <-done },
	}
}

// harness runs one scenario against one subject.
type harness struct {
	t        *testing.T
	s        *scriptedServer
	sub      subject
	selector fields.Selector
}

// settle waits until the store holds what the server holds and the
// reflector's resourceVersion is rv.
func (h *harness) settle(rv string) {
	h.t.Helper()
	waitFor(h.t, "store to match server at rv "+rv, func() bool {
		return maps.Equal(h.sub.state(), h.s.state(h.selector)) && h.sub.lastRV() == rv
	})
}

// waitRequests waits until the server has seen n requests and has a watch open.
func (h *harness) waitRequests(n int) {
	h.t.Helper()
	waitFor(h.t, fmt.Sprintf("%d requests and an open watch", n), func() bool {
		return len(h.s.log()) >= n && h.s.openWatches() > 0
	})
}

type scenario struct {
	name     string
	selector fields.Selector
	// streaming makes both reflectors try a streaming list first;
	// serverStreaming makes the server serve it (else it refuses it).
	streaming, serverStreaming bool
	// pageSize, when set, is the list page size of both reflectors.
	pageSize int64
	setup    func(s *scriptedServer)
	script   func(h *harness)
	// want is the request sequence both reflectors make; wantOurs and
	// wantClientGo replace it where ours deliberately differs.
	want, wantOurs, wantClientGo []string
}

func twoPods(s *scriptedServer) {
	s.add("ns", "a", "n1")
	s.add("ns", "b", "n1")
}

var expired = apierrors.NewResourceExpired("too old resource version")

// tooLarge is how an API server answers a list at a resourceVersion it has
// not reached yet (504 with cause ResourceVersionTooLarge).
var tooLarge = &apierrors.StatusError{ErrStatus: metav1.Status{
	Status: metav1.StatusFailure, Code: 504, Reason: metav1.StatusReasonTimeout,
	Message: "Too large resource version: 9, current: 3",
	Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
		Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version",
	}}},
}}

var scenarios = []scenario{{
	name:  "events apply and a cleanly closed watch resumes at once from the last RV",
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(2)
		h.settle("2")
		h.s.add("ns", "c", "n2")
		h.s.modify("ns", "a", "n1")
		h.s.remove("ns", "b")
		h.settle("5")
		h.s.toWatchers(watchCtl{close: true})
		h.waitRequests(3)
		h.s.add("ns", "d", "n1")
		h.settle("6")
	},
	want: []string{"list rv=0 limit=500", "watch rv=2", "watch rv=5"},
}, {
	name:     "a bookmark advances the RV of a filtered watch, which resumes from it",
	selector: fields.OneTermEqualSelector("spec.nodeName", "n1"),
	setup: func(s *scriptedServer) {
		s.add("ns", "a", "n1")
		s.add("ns", "x", "n2")
	},
	script: func(h *harness) {
		h.waitRequests(2)
		h.settle("2")
		h.s.modify("ns", "x", "n2")
		h.s.modify("ns", "x", "n2")
		h.s.toWatchers(watchCtl{bookmark: true})
		h.settle("4")
		h.s.toWatchers(watchCtl{close: true})
		h.waitRequests(3)
		h.s.add("ns", "b", "n1")
		h.settle("5")
	},
	want: []string{
		"list rv=0 limit=500 fieldSelector=spec.nodeName=n1",
		"watch rv=2 fieldSelector=spec.nodeName=n1",
		"watch rv=4 fieldSelector=spec.nodeName=n1",
	},
}, {
	name:  "a 410 error event re-lists at the last RV and watches from the list",
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(2)
		h.settle("2")
		h.s.add("ns", "c", "n1")
		h.settle("3")
		h.s.toWatchers(watchCtl{errEvent: expired})
		h.waitRequests(4)
		h.s.add("ns", "d", "n1")
		h.settle("4")
	},
	want: []string{"list rv=0 limit=500", "watch rv=2", "list rv=3", "watch rv=3"},
}, {
	name: "a watch closed at once with no event: ours backs off and re-watches, client-go re-lists",
	setup: func(s *scriptedServer) {
		twoPods(s)
		s.failNext(fault{verb: "watch", closeAtOnce: true})
	},
	script: func(h *harness) {
		waitFor(h.t, "a second watch at rv 2", func() bool {
			log := h.s.log()
			return len(log) > 2 && slices.Contains(log[2:], "watch rv=2") && h.s.openWatches() > 0
		})
		h.s.add("ns", "c", "n1")
		h.settle("3")
	},
	wantOurs:     []string{"list rv=0 limit=500", "watch rv=2", "watch rv=2"},
	wantClientGo: []string{"list rv=0 limit=500", "watch rv=2", "list rv=2", "watch rv=2"},
}, {
	name:  "a Gone error event (servers before 1.18) re-lists like Expired",
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(2)
		h.settle("2")
		h.s.add("ns", "c", "n1")
		h.settle("3")
		h.s.toWatchers(watchCtl{errEvent: apierrors.NewGone("gone")})
		h.waitRequests(4)
		h.settle("3")
	},
	want: []string{"list rv=0 limit=500", "watch rv=2", "list rv=3", "watch rv=3"},
}, {
	name:  "a re-list at a resourceVersion the server has not reached is retried at once at RV \"\"",
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(2)
		h.settle("2")
		h.s.add("ns", "c", "n1")
		h.settle("3")
		h.s.failNext(fault{verb: "list", status: tooLarge})
		h.s.toWatchers(watchCtl{errEvent: expired})
		h.waitRequests(5)
		h.s.add("ns", "d", "n1")
		h.settle("4")
	},
	wantOurs:     []string{"list rv=0 limit=500", "watch rv=2", "list rv=3 -> 504", "list rv= limit=500", "watch rv=3"},
	wantClientGo: []string{"list rv=0 limit=500", "watch rv=2", "list rv=3 -> 504", "list rv=", "watch rv=3"},
}, {
	name:  "a watch refused with 410 and an expired re-list end in a consistent list at RV \"\"",
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(2)
		h.settle("2")
		h.s.add("ns", "c", "n1")
		h.settle("3")
		h.s.failNext(fault{verb: "watch", status: expired})
		h.s.failNext(fault{verb: "list", status: expired})
		h.s.toWatchers(watchCtl{close: true})
		h.waitRequests(6)
		h.s.add("ns", "d", "n1")
		h.settle("4")
	},
	// Ours pages the consistent list from etcd; client-go keeps the page
	// size of the list at "3" (none) for its retry at "".
	wantOurs: []string{
		"list rv=0 limit=500", "watch rv=2", "watch rv=3 -> 410", "list rv=3 -> 410",
		"list rv= limit=500", "watch rv=3",
	},
	wantClientGo: []string{
		"list rv=0 limit=500", "watch rv=2", "watch rv=3 -> 410", "list rv=3 -> 410",
		"list rv=", "watch rv=3",
	},
}, {
	name:  "a watch opened from a compacted RV gets a 410 event and re-lists",
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(2)
		h.settle("2")
		h.s.add("ns", "c", "n1")
		h.settle("3")
		h.s.stop()
		h.s.add("ns", "d", "n1")
		h.s.compact()
		h.s.restart()
		h.waitRequests(5)
		h.settle("4")
	},
	want: []string{"list rv=0 limit=500", "watch rv=2", "watch rv=3", "list rv=3", "watch rv=4"},
}, {
	name:  "connection refused while the server is down: re-watch from the same RV, no re-list",
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(2)
		h.settle("2")
		h.s.add("ns", "c", "n1")
		h.settle("3")
		h.s.stop()
		h.s.add("ns", "d", "n1")
		h.s.remove("ns", "a")
		h.s.restart()
		h.waitRequests(3)
		h.settle("5")
	},
	want: []string{"list rv=0 limit=500", "watch rv=2", "watch rv=3"},
}, {
	name:  "a watch refused with 429 backs off and re-watches from the same RV",
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(2)
		h.settle("2")
		h.s.add("ns", "c", "n1")
		h.settle("3")
		h.s.failNext(fault{verb: "watch", status: apierrors.NewTooManyRequests("slow down", 0)})
		h.s.toWatchers(watchCtl{close: true})
		h.waitRequests(4)
		h.s.add("ns", "d", "n1")
		h.settle("4")
	},
	want: []string{"list rv=0 limit=500", "watch rv=2", "watch rv=3 -> 429", "watch rv=3"},
}, {
	name: "a failed list is retried after a backoff at the same RV",
	setup: func(s *scriptedServer) {
		twoPods(s)
		s.failNext(fault{verb: "list", status: apierrors.NewInternalError(fmt.Errorf("etcd down"))})
	},
	script: func(h *harness) {
		h.waitRequests(3)
		h.settle("2")
	},
	want: []string{"list rv=0 limit=500 -> 500", "list rv=0 limit=500", "watch rv=2"},
}, {
	name:     "a consistent re-list is paged to the last page",
	pageSize: 2,
	setup: func(s *scriptedServer) {
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			s.add("ns", n, "n1")
		}
		s.failNext(fault{verb: "list", status: expired})
	},
	script: func(h *harness) {
		h.waitRequests(5)
		h.settle("5")
	},
	want: []string{
		"list rv=0 limit=2 -> 410", "list rv= limit=2", "list rv= limit=2 continue", "list rv= limit=2 continue",
		"watch rv=5",
	},
}, {
	name:     "a consistent re-list is paged, and a page whose continue token expired is listed again whole",
	pageSize: 2,
	setup: func(s *scriptedServer) {
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			s.add("ns", n, "n1")
		}
		s.failNext(fault{verb: "list", status: expired})
		s.failNext(fault{verb: "list", continued: true, status: expired})
	},
	script: func(h *harness) {
		h.waitRequests(5)
		h.settle("5")
	},
	want: []string{
		"list rv=0 limit=2 -> 410", "list rv= limit=2", "list rv= limit=2 continue -> 410", "list rv=",
		"watch rv=5",
	},
}, {
	name:  "an internal-error event: ours re-watches from the last RV, client-go re-lists",
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(2)
		h.settle("2")
		h.s.add("ns", "c", "n1")
		h.settle("3")
		h.s.toWatchers(watchCtl{errEvent: apierrors.NewInternalError(fmt.Errorf("etcd watch broke"))})
		waitFor(h.t, "a new watch", func() bool { return slices.Contains(h.s.log(), "watch rv=3") && h.s.openWatches() > 0 })
		h.s.add("ns", "d", "n1")
		h.settle("4")
	},
	wantOurs:     []string{"list rv=0 limit=500", "watch rv=2", "watch rv=3"},
	wantClientGo: []string{"list rv=0 limit=500", "watch rv=2", "list rv=3", "watch rv=3"},
}}

const streamRequest = "watch rv=%s sendInitialEvents match=NotOlderThan"

var streamingScenarios = []scenario{{
	name:      "a streaming list fills the store and its stream goes on with the changes",
	streaming: true, serverStreaming: true,
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(1)
		h.settle("2")
		h.s.add("ns", "c", "n1")
		h.s.remove("ns", "a")
		h.settle("4")
		h.s.toWatchers(watchCtl{close: true})
		h.waitRequests(2)
		h.s.add("ns", "d", "n1")
		h.settle("5")
	},
	want: []string{fmt.Sprintf(streamRequest, ""), "watch rv=4"},
}, {
	name:      "a 410 ends the stream; the next streaming list at the last RV is expired too and retries at RV \"\"",
	streaming: true, serverStreaming: true,
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(1)
		h.settle("2")
		h.s.add("ns", "c", "n1")
		h.settle("3")
		h.s.failNext(fault{verb: "watch", status: expired})
		h.s.toWatchers(watchCtl{errEvent: expired})
		h.waitRequests(3)
		h.s.add("ns", "d", "n1")
		h.settle("4")
	},
	want: []string{fmt.Sprintf(streamRequest, ""), fmt.Sprintf(streamRequest, "3") + " -> 410", fmt.Sprintf(streamRequest, "")},
}, {
	name:      "a server that refuses streaming lists is listed; ours stops asking, client-go asks again each time",
	streaming: true, serverStreaming: false,
	setup: twoPods,
	script: func(h *harness) {
		h.waitRequests(3)
		h.settle("2")
		h.s.add("ns", "c", "n1")
		h.settle("3")
		h.s.toWatchers(watchCtl{errEvent: expired})
		waitFor(h.t, "a watch from the re-list", func() bool {
			return slices.Contains(h.s.log(), "watch rv=3") && h.s.openWatches() > 0
		})
		h.s.add("ns", "d", "n1")
		h.settle("4")
	},
	wantOurs: []string{fmt.Sprintf(streamRequest, "") + " -> 422", "list rv=0 limit=500", "watch rv=2", "list rv=3", "watch rv=3"},
	wantClientGo: []string{
		fmt.Sprintf(streamRequest, "") + " -> 422", "list rv=0 limit=500", "watch rv=2",
		fmt.Sprintf(streamRequest, "3") + " -> 422", "list rv=3", "watch rv=3",
	},
}}

// TestReflectorMatchesClientGo drives our Reflector and client-go's through
// the same scripted server scenarios and checks that both stores end up
// holding the server's pods and that both made the expected requests.
func TestReflectorMatchesClientGo(t *testing.T) {
	subjects := []struct {
		name string
		run  subjectFunc
		want func(sc scenario) []string
	}{
		{"kite", runOurs, func(sc scenario) []string { return cmpOr(sc.wantOurs, sc.want) }},
		{"client-go", runClientGo, func(sc scenario) []string { return cmpOr(sc.wantClientGo, sc.want) }},
	}
	for _, sc := range slices.Concat(scenarios, streamingScenarios) {
		t.Run(sc.name, func(t *testing.T) {
			for _, sj := range subjects {
				t.Run(sj.name, func(t *testing.T) {
					s := newScriptedServer(t)
					s.streaming = sc.serverStreaming
					sc.setup(s)
					sub := sj.run(t, s, sc)
					defer sub.stop()
					sc.script(&harness{t: t, s: s, sub: sub, selector: sc.selector})
					want := sj.want(sc)
					got := s.log()
					if len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
						t.Fatalf("requests:\n got  %q\n want %q", got, want)
					}
				})
			}
		})
	}
}

func cmpOr(a, b []string) []string {
	if a != nil {
		return a
	}
	return b
}
