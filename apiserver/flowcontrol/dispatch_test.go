package flowcontrol

import (
	"context"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lvl is a level of nominal seats, lendable of them lendable, borrowing
// more borrowable; queues 0 means Reject.
func lvl(name string, nominal, lendable, borrowing, queues, handSize, queueLength int) *levelConfig {
	return &levelConfig{pl: &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}},
		nominal: nominal, lendable: lendable, borrowing: borrowing,
		reject: queues == 0, queues: queues, handSize: handSize, queueLengthLimit: queueLength}
}

func dispatcherOf(levels ...*levelConfig) *dispatcher {
	d := newDispatcher(time.Now)
	c := &config{levels: map[string]*levelConfig{}}
	for _, l := range levels {
		c.levels[l.pl.Name] = l
	}
	d.configure(c)
	return d
}

// noWait bounds waits by the test's context only.
func noWait(ctx context.Context) (context.Context, context.CancelFunc) { return ctx, func() {} }

// started runs acquire in a goroutine; its result arrives on the channel.
type result struct {
	s   seat
	out outcome
}

func start(ctx context.Context, d *dispatcher, lc *levelConfig, hash uint64) <-chan result {
	ch := make(chan result, 1)
	go func() {
		s, out := d.acquire(ctx, noWait, lc, hash)
		ch <- result{s, out}
	}()
	return ch
}

// waitQueued waits until n requests wait in d.
func waitQueued(t *testing.T, d *dispatcher, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		d.mu.Lock()
		w := d.waiting
		d.mu.Unlock()
		if w == n {
			return
		}
	}
	t.Fatalf("never %d waiting", n)
}

func TestRejectLevelRefusesPastItsSeats(t *testing.T) {
	one := lvl("one", 1, 0, 0, 0, 0, 0)
	d := dispatcherOf(one)
	first, out := d.acquire(t.Context(), noWait, one, 1)
	if out != executed {
		t.Fatalf("first request: %v, want executed", out)
	}
	if _, out := d.acquire(t.Context(), noWait, one, 1); out != rejectedFull {
		t.Fatalf("second request while the first runs: %v, want rejected", out)
	}
	first.release()
	s, out := d.acquire(t.Context(), noWait, one, 1)
	if out != executed {
		t.Fatalf("after the first ended: %v, want executed", out)
	}
	s.release()
}

func TestQueuedRequestRunsWhenASeatFrees(t *testing.T) {
	q := lvl("q", 1, 0, 0, 1, 1, 10)
	d := dispatcherOf(q)
	first, _ := d.acquire(t.Context(), noWait, q, 1)
	second := start(t.Context(), d, q, 2)
	waitQueued(t, d, 1)
	select {
	case r := <-second:
		t.Fatalf("second request ran (%v) while the only seat is held", r.out)
	default:
	}
	first.release()
	if r := <-second; r.out != executed {
		t.Fatalf("second request: %v, want executed", r.out)
	} else {
		r.s.release()
	}
}

func TestFullQueueRejects(t *testing.T) {
	q := lvl("q", 1, 0, 0, 1, 1, 1)
	d := dispatcherOf(q)
	first, _ := d.acquire(t.Context(), noWait, q, 1)
	queued := start(t.Context(), d, q, 1)
	waitQueued(t, d, 1)
	if _, out := d.acquire(t.Context(), noWait, q, 1); out != rejectedFull {
		t.Fatalf("third request with the queue full: %v, want rejected", out)
	}
	first.release()
	(<-queued).s.release()
}

func TestWaitLimitRejectsAndLeavesTheQueue(t *testing.T) {
	q := lvl("q", 1, 0, 0, 1, 1, 10)
	d := dispatcherOf(q)
	first, _ := d.acquire(t.Context(), noWait, q, 1)
	short := func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, 20*time.Millisecond)
	}
	if _, out := d.acquire(t.Context(), short, q, 1); out != rejectedTimeout {
		t.Fatalf("request past its wait limit: %v, want rejected (timeout)", out)
	}
	d.mu.Lock()
	waiting, queued := d.waiting, len(d.levels["q"].queues[0].waiters)
	d.mu.Unlock()
	if waiting != 0 || queued != 0 {
		t.Errorf("after the timeout %d waiting, %d queued; want none", waiting, queued)
	}
	first.release()
}

// TestFairQueuing: a flow with many waiting requests does not make a flow
// with one wait behind all of them: the queues take turns.
func TestFairQueuing(t *testing.T) {
	q := lvl("q", 1, 0, 0, 8, 1, 10)
	d := dispatcherOf(q)
	// Two flows whose hands (of one queue) differ.
	heavy, light := uint64(0), uint64(1)
	running, _ := d.acquire(t.Context(), noWait, q, heavy)
	var heavyDone []<-chan result
	for i := range 4 {
		heavyDone = append(heavyDone, start(t.Context(), d, q, heavy))
		waitQueued(t, d, i+1)
	}
	lightDone := start(t.Context(), d, q, light)
	waitQueued(t, d, 5)
	// One seat: each release lets one through. The light flow's request
	// must be among the first two.
	running.release()
	for turn := 1; ; turn++ {
		select {
		case r := <-lightDone:
			r.s.release()
			if turn > 2 {
				t.Fatalf("the light flow ran at turn %d, want 1 or 2", turn)
			}
			for _, h := range heavyDone {
				(<-h).s.release()
			}
			return
		case r := <-heavyDone[0]:
			heavyDone = heavyDone[1:]
			r.s.release()
		case <-time.After(5 * time.Second):
			t.Fatal("nothing ran")
		}
	}
}

// TestBorrowing: a level past its guaranteed seats borrows what others
// may lend, up to its limit, and gets no more once the pool is used.
func TestBorrowing(t *testing.T) {
	small := lvl("small", 1, 0, 2, 0, 0, 0)   // may use 3
	lender := lvl("lender", 2, 2, 0, 0, 0, 0) // lends both
	d := dispatcherOf(small, lender)
	var held []seat
	for i := range 3 {
		s, out := d.acquire(t.Context(), noWait, small, 1)
		if out != executed {
			t.Fatalf("request %d of small: %v, want executed (own seat, then 2 borrowed)", i, out)
		}
		held = append(held, s)
	}
	if _, out := d.acquire(t.Context(), noWait, small, 1); out != rejectedFull {
		t.Fatalf("small past its limit: %v, want rejected", out)
	}
	// The lender lent both seats: it has none of its own left.
	if _, out := d.acquire(t.Context(), noWait, lender, 1); out != rejectedFull {
		t.Fatalf("lender with its seats lent: %v, want rejected", out)
	}
	held[0].release()
	s, out := d.acquire(t.Context(), noWait, lender, 1)
	if out != executed {
		t.Fatalf("lender once a seat came back: %v, want executed", out)
	}
	s.release()
	for _, s := range held[1:] {
		s.release()
	}
}

func TestExemptIsNeverLimited(t *testing.T) {
	ex := &levelConfig{pl: &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "exempt"}}, exempt: true}
	d := dispatcherOf(ex)
	for range 1000 {
		if _, out := d.acquire(t.Context(), noWait, ex, 1); out != executed {
			t.Fatal("an exempt request was limited")
		}
	}
}

// TestReconfigure: a removed level's waiting requests are rejected; a
// level whose queues change keeps its waiting requests; more seats let
// waiting requests run.
func TestReconfigure(t *testing.T) {
	a := lvl("a", 1, 0, 0, 2, 1, 10)
	b := lvl("b", 1, 0, 0, 2, 1, 10)
	d := dispatcherOf(a, b)
	sa, _ := d.acquire(t.Context(), noWait, a, 1)
	sb, _ := d.acquire(t.Context(), noWait, b, 1)
	waitA := start(t.Context(), d, a, 1)
	waitB := start(t.Context(), d, b, 1)
	waitQueued(t, d, 2)
	// b goes away; a gets two seats and other queues.
	d.configure(&config{levels: map[string]*levelConfig{"a": lvl("a", 2, 0, 0, 4, 2, 10)}})
	if r := <-waitB; r.out == executed {
		t.Error("a waiting request of a removed level ran")
	}
	r := <-waitA
	if r.out != executed {
		t.Fatalf("a waiting request of a level given a second seat: %v, want executed", r.out)
	}
	r.s.release()
	sa.release()
	sb.release() // of a removed level: harmless
}
