// Package controller is the scaffold every queue-driven controller of
// controllers/ runs on: a Loop (informers, an event recorder and workers
// taking keys from a workqueue, with WaitIdle), Expectations (what a
// controller wrote and waits to see in its caches, expiring after five
// minutes as upstream's), a pure claim decision with one runner that
// patches owner references (upstream's ControllerRefManager), and the pod
// helpers every workload controller uses (Active, Ready, Available,
// SortActive, SlowStart).
//
// A new controller is a decision file (pure functions with table tests)
// and a short runner: New builds its informers with handlers that queue
// keys and returns a Loop whose Sync reads the caches, calls the
// decision and writes the result (docs/controllers.md, "Shape of a
// controller").
package controller

import (
	"context"
	"sync"

	"k8s.io/klog/v2"

	"github.com/kite-project/kite/controllers/events"
	"github.com/kite-project/kite/controllers/informer"
	"github.com/kite-project/kite/controllers/workqueue"
)

// Informer is a cache the Loop runs and waits for, e.g. an
// *informer.Informer.
type Informer interface {
	Run(ctx context.Context)
	Synced() <-chan struct{}
}

// Loop runs one controller: its informers, its event recorder and its
// background goroutines, then, once the informers have synced, its
// workers. Every goroutine stops with Run's context, and Run returns only
// after they have.
type Loop[K comparable] struct {
	// Name names the controller in logs ("replicaset-controller").
	Name string
	// Queue holds the keys to sync. Required.
	Queue *workqueue.Queue[K]
	// Informers are run and waited for before any key is synced.
	Informers []Informer
	// Recorder, if set, is run beside the informers.
	Recorder *events.Recorder
	// Background are more goroutines the controller owns (a periodic
	// pass, binders); they start with the informers.
	Background []func(ctx context.Context)
	// WaitForSync, if set, is waited for after the informers (caches the
	// controller makes as it goes, such as the garbage collector's).
	WaitForSync func(ctx context.Context) error
	// Started, if set, runs once the caches have synced, before the
	// workers.
	Started func(ctx context.Context)
	// Workers sync keys in parallel; 0 means 1.
	Workers int
	// Sync brings one key's objects where they should be. An error
	// retries the key after its growing delay (workqueue.AddRateLimited);
	// nil forgets its failures. A Sync that wants another look later
	// calls Queue.AddAfter itself.
	Sync func(ctx context.Context, key K) error
	// OwnRetries leaves retrying and forgetting keys to the controller:
	// Sync's error is only logged. It is for a controller whose writes
	// end after Sync returns (the scheduler's bindings).
	OwnRetries bool
}

// Run works until ctx ends. Its logger, klog.FromContext(ctx) named
// after the controller, is the context's logger for every Sync.
func (l *Loop[K]) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName(l.Name)
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer l.Queue.ShutDown()
	if l.Recorder != nil {
		wg.Go(func() { l.Recorder.Run(ctx) })
	}
	for _, inf := range l.Informers {
		wg.Go(func() { inf.Run(ctx) })
	}
	for _, f := range l.Background {
		wg.Go(func() { f(ctx) })
	}
	if err := l.waitForSync(ctx); err != nil {
		return
	}
	if l.Started != nil {
		l.Started(ctx)
	}
	failed := func(key K, err error) {
		if ctx.Err() == nil {
			logger.V(2).Info("Sync failed", "key", key, "err", err)
		}
	}
	for range max(l.Workers, 1) {
		if !l.OwnRetries {
			wg.Go(func() { l.Queue.Work(ctx, l.Sync, failed) })
			continue
		}
		wg.Go(func() {
			for {
				key, ok := l.Queue.Get(ctx)
				if !ok {
					return
				}
				if err := l.Sync(ctx, key); err != nil {
					failed(key, err)
				}
				l.Queue.Done(key)
			}
		})
	}
	<-ctx.Done()
}

func (l *Loop[K]) waitForSync(ctx context.Context) error {
	syncers := make([]informer.Syncer, len(l.Informers))
	for i, inf := range l.Informers {
		syncers[i] = inf
	}
	if err := informer.WaitForSync(ctx, syncers...); err != nil {
		return err
	}
	if l.WaitForSync != nil {
		return l.WaitForSync(ctx)
	}
	return nil
}

// WaitIdle returns once the caches are listed and no key is queued or
// being synced (keys waiting out a delay do not count), or ctx's error.
func (l *Loop[K]) WaitIdle(ctx context.Context) error {
	if err := l.waitForSync(ctx); err != nil {
		return err
	}
	return l.Queue.WaitIdle(ctx)
}
