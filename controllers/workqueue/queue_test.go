package workqueue

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestAddWhileQueuedIsOne(t *testing.T) {
	q := New[string](Options{})
	q.Add("a")
	q.Add("b")
	q.Add("a")
	if q.Len() != 2 {
		t.Fatalf("Len = %d, want 2", q.Len())
	}
	ctx := t.Context()
	for _, want := range []string{"a", "b"} {
		k, ok := q.Get(ctx)
		if !ok || k != want {
			t.Fatalf("Get = %q %v, want %q", k, ok, want)
		}
		q.Done(k)
	}
}

// A key added while a worker holds it is handed out again after Done,
// never to a second worker meanwhile.
func TestAddWhileProcessingComesBackAfterDone(t *testing.T) {
	q := New[string](Options{})
	ctx := t.Context()
	q.Add("a")
	k, _ := q.Get(ctx)
	q.Add("a")
	if q.Len() != 0 {
		t.Fatalf("a key being worked on was queued beside it")
	}
	q.Done(k)
	if q.Len() != 1 {
		t.Fatalf("Len after Done = %d, want 1", q.Len())
	}
}

func TestRetryDelaysDoubleUntilForget(t *testing.T) {
	q := New[string](Options{BaseDelay: 20 * time.Millisecond, MaxDelay: 50 * time.Millisecond})
	defer q.ShutDown()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var took []time.Duration
	for range 3 {
		start := time.Now()
		q.AddRateLimited("a")
		k, ok := q.Get(ctx)
		if !ok {
			t.Fatal("no key")
		}
		took = append(took, time.Since(start))
		q.Done(k)
	}
	// 20 ms, 40 ms, then capped at 50 ms.
	for i, min := range []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond} {
		if took[i] < min {
			t.Errorf("retry %d came after %v, want at least %v", i, took[i], min)
		}
	}
	if q.Failures("a") != 3 {
		t.Fatalf("Failures = %d, want 3", q.Failures("a"))
	}
	q.Forget("a")
	if q.Failures("a") != 0 {
		t.Fatalf("Failures after Forget = %d", q.Failures("a"))
	}
}

func TestWaitIdle(t *testing.T) {
	q := New[int](Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for i := range 100 {
		q.Add(i)
	}
	var worked sync.WaitGroup
	var mu sync.Mutex
	seen := 0
	worked.Go(func() {
		for {
			k, ok := q.Get(ctx)
			if !ok {
				return
			}
			mu.Lock()
			seen++
			mu.Unlock()
			q.Done(k)
		}
	})
	if err := q.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	got := seen
	mu.Unlock()
	if got != 100 {
		t.Fatalf("idle after %d of 100 keys", got)
	}
	q.ShutDown()
	worked.Wait()
}

func TestShutDownEndsGetAndDelayedAdds(t *testing.T) {
	q := New[string](Options{})
	q.AddAfter("later", time.Hour)
	done := make(chan bool)
	go func() {
		_, ok := q.Get(context.Background())
		done <- ok
	}()
	q.ShutDown()
	if ok := <-done; ok {
		t.Fatal("Get returned a key after ShutDown")
	}
	q.Add("x")
	if q.Len() != 0 {
		t.Fatal("Add after ShutDown queued a key")
	}
}

// Work retries a key whose sync failed, after its delay, and forgets its
// failures once it succeeds.
func TestWorkRetriesFailuresThenForgets(t *testing.T) {
	q := New[string](Options{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	var calls, reported int
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		q.Work(ctx, func(_ context.Context, k string) error {
			calls++
			if calls < 3 {
				return context.DeadlineExceeded
			}
			close(done)
			return nil
		}, func(string, error) { reported++ })
	})
	q.Add("a")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the key was not synced three times")
	}
	if err := q.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	wg.Wait()
	if calls != 3 || reported != 2 || q.Failures("a") != 0 {
		t.Errorf("calls %d, failures reported %d, failures kept %d; want 3, 2, 0", calls, reported, q.Failures("a"))
	}
}
