package daemonset

import "context"

// Test hooks into the runner's internals, for the race tests of
// controller_test.go.

// SetAfterList makes every sync call f with its context between reading
// the pods' cache and deciding. Call it before Run.
func SetAfterList(c *Controller, f func(context.Context)) { c.afterList = f }

// ExpectCreations sets key's expectations to n creations not yet seen.
func ExpectCreations(c *Controller, key string, n int) { c.expect.Expect(key, n, nil, nil) }

// Satisfied says whether key's expectations are satisfied.
func Satisfied(c *Controller, key string) bool { return c.expect.Satisfied(key) }

// Sync syncs key once, as a worker would.
func Sync(ctx context.Context, c *Controller, key string) error { return c.sync(ctx, key) }

// Known says whether the controller's cache holds the DaemonSet key.
func Known(c *Controller, key string) bool { _, ok := c.sets.Store().Get(key); return ok }
