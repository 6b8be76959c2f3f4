package kitetest

import (
	"context"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/kite-project/kite"
)

// Restartable is a Kite that a test stops and starts again on the same data
// directory and port, as an API server restarted under its clients. The
// CA and admin token live in the data directory, so a client config taken
// before a restart works after it.
type Restartable struct {
	t    *testing.T
	opts kite.Options
	srv  *kite.Server
}

// StartRestartable starts a Kite on a free port and keeps the port for
// later starts. It is stopped when the test ends.
func StartRestartable(t *testing.T) *Restartable {
	t.Helper()
	r := &Restartable{t: t, opts: kite.Options{DataDir: t.TempDir(), EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"}}
	r.Start()
	u, err := url.Parse(r.srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if r.opts.SecurePort, err = strconv.Atoi(u.Port()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// Server is the running server; nil while stopped.
func (r *Restartable) Server() *kite.Server { return r.srv }

// Start starts the server again (or the first time).
func (r *Restartable) Start() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := kite.Start(ctx, r.opts)
	if err != nil {
		r.t.Fatalf("start kite on %s port %d: %v", r.opts.DataDir, r.opts.SecurePort, err)
	}
	r.srv = srv
}

// Stop stops the server; stopping a stopped server does nothing.
func (r *Restartable) Stop() {
	if r.srv == nil {
		return
	}
	if err := r.srv.Close(); err != nil {
		r.t.Errorf("close kite: %v", err)
	}
	r.srv = nil
}
