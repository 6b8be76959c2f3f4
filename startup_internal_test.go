package kite

import (
	"context"
	"testing"
	"time"
)

// TestPostStartHookFailsReadyzUntilFinished: a hook's /readyz check fails
// until the hook finished, as upstream's poststarthook/<name> checks, and
// waiting for it returns once it did.
func TestPostStartHookFailsReadyzUntilFinished(t *testing.T) {
	h := newPostStartHook("rbac/bootstrap-roles")
	c := h.check()
	if c.Name != "poststarthook/rbac/bootstrap-roles" {
		t.Errorf("check name %q", c.Name)
	}
	if err := c.Check(nil); err == nil {
		t.Error("check passed before the hook finished")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := h.wait(ctx); err == nil {
		t.Error("wait returned before the hook finished")
	}
	h.finish()
	h.finish() // a second call does nothing
	if err := c.Check(nil); err != nil {
		t.Errorf("check after finish: %v", err)
	}
	if err := h.wait(t.Context()); err != nil {
		t.Errorf("wait after finish: %v", err)
	}
}
