package listwatch

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
)

// stepLW is an in-process ListerWatcher whose calls fail as queued; a
// successful watch is a fake watcher the test drives.
type stepLW struct {
	mu        sync.Mutex
	listErrs  []error // consumed one per List; nil or empty: success
	watchErrs []error // consumed one per Watch; nil or empty: success
	lists     []metav1.ListOptions
	watches   []metav1.ListOptions
	open      *watch.RaceFreeFakeWatcher
	listRV    string
}

func (l *stepLW) List(_ context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists = append(l.lists, opts)
	if len(l.listErrs) > 0 {
		err := l.listErrs[0]
		l.listErrs = l.listErrs[1:]
		if err != nil {
			return nil, err
		}
	}
	return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: l.listRV}}, nil
}

func (l *stepLW) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watches = append(l.watches, opts)
	if len(l.watchErrs) > 0 {
		err := l.watchErrs[0]
		l.watchErrs = l.watchErrs[1:]
		if err != nil {
			return nil, err
		}
	}
	l.open = watch.NewRaceFreeFake()
	return l.open, nil
}

func (l *stepLW) counts() (lists, watches int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lists), len(l.watches)
}

func (l *stepLW) listOpts(i int) metav1.ListOptions {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lists[i]
}

func (l *stepLW) watchOpts(i int) metav1.ListOptions {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.watches[i]
}

func (l *stepLW) watcher() *watch.RaceFreeFakeWatcher {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func (l *stepLW) lastWatchRV() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.watches[len(l.watches)-1].ResourceVersion
}

// startFake runs a Reflector over lw on a fake clock with no jitter;
// tweaks change its options first.
func startFake(t *testing.T, lw *stepLW, tweaks ...func(*Options)) (*clocktesting.FakeClock, *Reflector) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	opts := Options{
		Name: "pods", ListerWatcher: lw, Store: NewIndexer(IndexerOptions[*v1.Pod]{}),
		Clock: clk, Rand: func() float64 { return 0 },
	}
	for _, tweak := range tweaks {
		tweak(&opts)
	}
	r, err := NewReflector(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return clk, r
}

// stepUntil advances clk by d less a millisecond, checks that the call
// count is unchanged (the wait has not ended, so nothing can have run),
// then by the last millisecond and waits for the next call.
func stepUntil(t *testing.T, clk *clocktesting.FakeClock, d time.Duration, calls func() int) {
	t.Helper()
	n := calls()
	clk.Step(d - time.Millisecond)
	if got := calls(); got != n {
		t.Fatalf("call %d came before %v had passed", got, d)
	}
	clk.Step(time.Millisecond)
	waitFor(t, "the call after the wait", func() bool { return calls() == n+1 })
}

func TestReflectorBacksOffFailedListsExponentially(t *testing.T) {
	boom := apierrors.NewInternalError(errTestFailure)
	lw := &stepLW{listRV: "10", listErrs: []error{boom, boom, boom, boom}}
	clk, r := startFake(t, lw)
	lists := func() int { n, _ := lw.counts(); return n }
	for i, d := range []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond} {
		waitFor(t, "the backoff timer", func() bool { return lists() == i+1 && clk.Waiters() == 1 })
		stepUntil(t, clk, d, lists)
	}
	waitFor(t, "the first watch", func() bool { _, w := lw.counts(); return w == 1 })
	if !r.HasSynced() || r.LastSyncResourceVersion() != "10" {
		t.Fatalf("synced %v rv %q", r.HasSynced(), r.LastSyncResourceVersion())
	}
	for i := range lists() {
		o := lw.listOpts(i)
		if o.ResourceVersion != "0" || o.Limit != DefaultPageSize {
			t.Fatalf("list options %+v, want rv 0 limit %d each time", o, DefaultPageSize)
		}
	}
}

func TestReflectorWatchRecovery(t *testing.T) {
	slow := apierrors.NewTooManyRequests("slow down", 0)
	lw := &stepLW{listRV: "10", watchErrs: []error{slow, slow}}
	clk, r := startFake(t, lw)
	watches := func() int { _, w := lw.counts(); return w }
	lists := func() int { n, _ := lw.counts(); return n }

	// A refused watch backs off 0.8 s then 1.6 s, and keeps its RV: no list.
	waitFor(t, "first refused watch", func() bool { return watches() == 1 && clk.Waiters() == 1 })
	stepUntil(t, clk, 800*time.Millisecond, watches)
	waitFor(t, "second backoff", func() bool { return clk.Waiters() == 1 })
	stepUntil(t, clk, 1600*time.Millisecond, watches)
	waitFor(t, "an open watch", func() bool { return lw.watcher() != nil })
	if lists() != 1 || lw.lastWatchRV() != "10" {
		t.Fatalf("lists %d, watch rv %q", lists(), lw.lastWatchRV())
	}
	if o := lw.watchOpts(2); o.TimeoutSeconds == nil || *o.TimeoutSeconds != 300 || !o.AllowWatchBookmarks {
		t.Fatalf("watch options %+v", o)
	}

	// An event, then a clean end: re-watch at once from the event's RV.
	lw.watcher().Add(testPod("ns", "a", "11", "n1"))
	waitFor(t, "rv 11", func() bool { return r.LastSyncResourceVersion() == "11" })
	lw.watcher().Stop()
	waitFor(t, "the watch resumed without waiting", func() bool { return watches() == 4 })
	if lw.lastWatchRV() != "11" || lists() != 1 {
		t.Fatalf("resumed at %q after %d lists", lw.lastWatchRV(), lists())
	}

	// A watch the server never ends is ended after its timeout and grace.
	waitFor(t, "the watch deadline", func() bool { return clk.Waiters() == 1 })
	stepUntil(t, clk, 300*time.Second+watchTimeoutGrace, watches)

	// After more than two healthy minutes the backoff starts again at 0.8 s.
	lw.mu.Lock()
	lw.watchErrs = []error{slow}
	lw.mu.Unlock()
	lw.watcher().Add(testPod("ns", "b", "12", "n1"))
	waitFor(t, "rv 12", func() bool { return r.LastSyncResourceVersion() == "12" })
	lw.watcher().Stop()
	waitFor(t, "a refused watch", func() bool { return watches() == 6 && clk.Waiters() == 1 })
	stepUntil(t, clk, 800*time.Millisecond, watches)

	// A 410 after a watch that worked re-lists at once, at the last RV.
	waitFor(t, "an open watch", func() bool { return watches() == 7 && lw.watcher() != nil })
	lw.watcher().Add(testPod("ns", "c", "13", "n1"))
	lw.watcher().Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired})
	waitFor(t, "the re-list", func() bool { return lists() == 2 })
	if o := lw.listOpts(1); o.ResourceVersion != "13" || o.Limit != 0 {
		t.Fatalf("re-list options %+v, want rv 13 and no limit", o)
	}
}

var errTestFailure = errors.New("scripted failure")

// errRefused is what a client's request to a server that is down fails
// with.
func errRefused() error {
	return &url.Error{Op: "Get", URL: "http://127.0.0.1:1/api/v1/pods", Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED),
	}}
}

// capRefusedWait is a startFake tweak: waits after refused connections
// end after at most a second (half of it with no jitter).
func capRefusedWait(o *Options) { o.RefusedMaxWait = time.Second }

func TestReflectorCapsWaitsAfterConnectionRefusedOrLost(t *testing.T) {
	refused := errRefused()
	lost := func(errno syscall.Errno) error {
		return &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/pods", Err: &net.OpError{
			Op: "write", Net: "tcp", Err: os.NewSyscallError("write", errno),
		}}
	}
	slow := apierrors.NewTooManyRequests("slow down", 0)
	// A restarted server: refused while it is down, a broken pipe or
	// reset on the connection the client still held, and a 503 from a
	// server that is shutting down (its watch cache has stopped).
	unavailable := apierrors.NewServiceUnavailable("watchcache pods: stopped")
	lw := &stepLW{listRV: "10", watchErrs: []error{refused, lost(syscall.EPIPE), unavailable, lost(syscall.ECONNRESET), refused, slow}}
	clk, _ := startFake(t, lw, capRefusedWait)
	watches := func() int { _, w := lw.counts(); return w }

	// Refused, cut or unavailable five times: each wait is half a second
	// (RefusedMaxWait with no jitter), though the backoff underneath has
	// grown to 25.6 s.
	for i := range 5 {
		waitFor(t, "a backoff timer", func() bool { return watches() == i+1 && clk.Waiters() == 1 })
		stepUntil(t, clk, 500*time.Millisecond, watches)
	}
	// A 429 is not capped: it waits the grown backoff.
	waitFor(t, "the 429 backoff timer", func() bool { return watches() == 6 && clk.Waiters() == 1 })
	stepUntil(t, clk, 25600*time.Millisecond, watches)
	if lists, _ := lw.counts(); lists != 1 {
		t.Fatalf("%d lists, want 1: refused watches resume without a list", lists)
	}
}

// An API server restarted under the Reflector: refused while it is down,
// then a 410 because the new server's cache starts after our
// resourceVersion. The re-list comes at once, not after the backoff that
// the refusals grew (the agent saw 20 s and more).
func TestReflectorRelistsAtOnceAfterRestartedServerSays410(t *testing.T) {
	refused := errRefused()
	gone := apierrors.NewResourceExpired("too old resource version: 10 (12)")
	lw := &stepLW{listRV: "10", watchErrs: []error{refused, refused, refused, refused, gone}}
	clk, _ := startFake(t, lw, capRefusedWait)
	watches := func() int { _, w := lw.counts(); return w }
	for i := range 3 {
		waitFor(t, "a backoff timer", func() bool { return watches() == i+1 && clk.Waiters() == 1 })
		stepUntil(t, clk, 500*time.Millisecond, watches)
	}
	// The fourth wait ends; the fifth watch gets the 410, and the re-list
	// (and the watch after it) follow with no further clock step.
	waitFor(t, "the fourth backoff timer", func() bool { return watches() == 4 && clk.Waiters() == 1 })
	clk.Step(500 * time.Millisecond)
	waitFor(t, "the re-list after the 410", func() bool { n, _ := lw.counts(); return n == 2 })

	// The server goes down again at once: the new watch ends cleanly with
	// nothing in it. While the server was lately away that costs the
	// capped wait, not the backoff the refusals grew.
	waitFor(t, "the watch after the re-list", func() bool { return watches() == 6 && lw.watcher() != nil })
	lw.watcher().Stop()
	// The watch's own deadline timer is a waiter too, so step in small
	// increments: the next watch must come within the cap (0.5 s here),
	// far below the grown backoff (25.6 s and more).
	for stepped := time.Duration(0); watches() < 7; stepped += 100 * time.Millisecond {
		if stepped > 5*time.Second {
			t.Fatalf("no watch %v after a short watch while the server was lately away", stepped)
		}
		clk.Step(100 * time.Millisecond)
		deadline := time.Now().Add(50 * time.Millisecond)
		for watches() < 7 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
}
