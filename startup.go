package kite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/kite-project/kite/apiserver"
)

// postStartHook is one of the start's steps that /readyz waits for, as
// kube-apiserver's readyz lists each PostStartHook
// ("poststarthook/<name>") and fails until it has finished: a client
// that sees /readyz ok finds the bootstrap RBAC policy and the API
// priority and fairness objects in place, even though the server already
// answers other requests while they are written (docs/startup.md).
type postStartHook struct {
	name string
	done chan struct{}
	once sync.Once
}

func newPostStartHook(name string) *postStartHook {
	return &postStartHook{name: name, done: make(chan struct{})}
}

// finish marks the hook done; later calls do nothing.
func (h *postStartHook) finish() { h.once.Do(func() { close(h.done) }) }

// check is the hook's /readyz check.
func (h *postStartHook) check() apiserver.HealthCheck {
	return apiserver.HealthCheck{Name: "poststarthook/" + h.name, Check: func(*http.Request) error {
		select {
		case <-h.done:
			return nil
		default:
			return fmt.Errorf("not finished")
		}
	}}
}

// wait returns once the hook finished, or ctx ended.
func (h *postStartHook) wait(ctx context.Context) error {
	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("post-start hook %s: %w", h.name, ctx.Err())
	}
}

// postStartHooks are the server's hooks that /readyz waits for, in
// upstream's names.
type postStartHooks struct {
	rbac *postStartHook // rbac/bootstrap-roles
	apf  *postStartHook // priority-and-fairness-config-producer
}

func newPostStartHooks() postStartHooks {
	return postStartHooks{
		rbac: newPostStartHook("rbac/bootstrap-roles"),
		apf:  newPostStartHook("priority-and-fairness-config-producer"),
	}
}

func (h postStartHooks) checks() []apiserver.HealthCheck {
	return []apiserver.HealthCheck{h.rbac.check(), h.apf.check()}
}

// waitPostStartHooks returns once every hook has finished, so that Start
// returns a server whose /readyz answers ok.
func (s *Server) waitPostStartHooks(ctx context.Context, timeout time.Duration) error {
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, h := range []*postStartHook{s.hooks.rbac, s.hooks.apf} {
		if err := h.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// future is the result of work started ahead of the step that needs it,
// so that CPU-bound preparation (parsing the bootstrap policy, building
// the OpenAPI documents) overlaps the start's waits on etcd.
type future[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// startFuture runs f on a goroutine of its own; f ends by itself.
func startFuture[T any](f func() (T, error)) *future[T] {
	fu := &future[T]{done: make(chan struct{})}
	go func() {
		defer close(fu.done)
		fu.v, fu.err = f()
	}()
	return fu
}

func (f *future[T]) get() (T, error) {
	<-f.done
	return f.v, f.err
}

// parallel runs fs at once and returns their errors once all returned.
func parallel(fs ...func() error) error {
	errs := make([]error, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Go(func() { errs[i] = f() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
