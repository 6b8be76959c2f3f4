// Package sourcetest holds what the tests of the pod sources (file, http,
// api) share: running a source until the test ends, reading its updates,
// and recording the problems it reports. Only tests import it.
package sourcetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"

	"github.com/kite-project/kite/agent/kubetypes"
)

// Source is what every pod source implements.
type Source interface {
	Run(ctx context.Context, out chan<- kubetypes.PodUpdate)
}

// Run runs s until the test ends, its logs going to the test's output,
// and returns the channel it sends its updates on. The cleanup waits for
// s to return.
func Run(t testing.TB, s Source) <-chan kubetypes.PodUpdate {
	t.Helper()
	_, logCtx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(logCtx)
	out := make(chan kubetypes.PodUpdate)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, out)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return out
}

// Next returns the next update from ch, which must be a SET from source;
// it fails the test after timeout.
func Next(t testing.TB, ch <-chan kubetypes.PodUpdate, source string, timeout time.Duration) kubetypes.PodUpdate {
	t.Helper()
	select {
	case u := <-ch:
		if u.Op != kubetypes.SET || u.Source != source {
			t.Fatalf("got %s from %q, want SET from %s", u.Op, u.Source, source)
		}
		return u
	case <-time.After(timeout):
		t.Fatalf("no update from the %s source", source)
	}
	return kubetypes.PodUpdate{}
}

// Recorder collects the problems a source reports.
type Recorder struct {
	mu       sync.Mutex
	problems []kubetypes.Problem
}

// ReportProblem implements the sources' problem reporter.
func (r *Recorder) ReportProblem(p kubetypes.Problem) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, p)
}

// List returns the problems reported so far.
func (r *Recorder) List() []kubetypes.Problem {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]kubetypes.Problem(nil), r.problems...)
}

// WaitProblem waits up to timeout for a problem with reason about where.
func (r *Recorder) WaitProblem(t testing.TB, reason, where string, timeout time.Duration) kubetypes.Problem {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, p := range r.List() {
			if p.Reason == reason && p.Where == where {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond) // polling, not synchronisation
	}
	t.Fatalf("no %s problem about %s; got %v", reason, where, r.List())
	return kubetypes.Problem{}
}
