package periodic

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// WaitIdle returns only after a pass that saw what was written before it.
func TestWaitIdleSeesEarlierWrites(t *testing.T) {
	l := New()
	var written, seen atomic.Int64
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Run(ctx, time.Hour, func(context.Context) {
			seen.Store(written.Load())
			time.Sleep(time.Millisecond)
		})
	})
	defer func() { cancel(); wg.Wait() }()
	for i := range int64(50) {
		written.Store(i)
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		err := l.WaitIdle(wctx)
		wcancel()
		if err != nil {
			t.Fatal(err)
		}
		if got := seen.Load(); got < i {
			t.Fatalf("WaitIdle returned after a pass that saw %d, written %d", got, i)
		}
	}
}

func TestRunEndsWithContext(t *testing.T) {
	l := New()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx, time.Millisecond, func(context.Context) {}) }()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end")
	}
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer wcancel()
	if err := l.WaitIdle(wctx); err == nil {
		t.Fatal("WaitIdle of a stopped loop returned nil")
	}
}
