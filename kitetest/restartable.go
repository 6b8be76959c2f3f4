package kitetest

import (
	"context"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
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
//
// The port is one below the kernel's ephemeral range: a port the kernel
// handed out for ":0" could, once the server stops, be handed out again
// to any listener that asks for ":0" (the restarted server's own embedded
// etcd among them) before the server binds it again.
func StartRestartable(t *testing.T) *Restartable {
	t.Helper()
	r := &Restartable{t: t, opts: kite.Options{DataDir: t.TempDir(), EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal"}}
	r.opts.SecurePort = freePortBelowEphemeral(t)
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// freePortBelowEphemeral returns a port of 127.0.0.1 that is free now and
// that the kernel never picks for ":0" (below ip_local_port_range).
func freePortBelowEphemeral(t *testing.T) int {
	t.Helper()
	low := 32768 // Linux's default start of the range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				low = n
			}
		}
	}
	for range 100 {
		port := 10000 + rand.IntN(low-10000)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatalf("no free port of 127.0.0.1 between 10000 and %d", low)
	return 0
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
