package backend

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kite-project/kite/storage/etcd/embedded"
	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

func TestOpenEmbeddedServesAndReopens(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := Options{Embedded: embedded.Options{DataDir: dir, UnsafeNoFsync: true}}
	b, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Embedded() || len(b.Endpoints()) != 1 || !strings.HasPrefix(b.Endpoints()[0], "https://127.0.0.1:") {
		t.Fatalf("embedded=%v endpoints=%v, want one https://127.0.0.1 URL", b.Embedded(), b.Endpoints())
	}
	if _, err := b.Client().Put(ctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
	b.Close()
	b.Close()

	b, err = Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r, err := b.Client().Get(ctx, "/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
		t.Fatalf("after reopen got %v, want /k=v", r.Kvs)
	}
}

func TestOpenExternalEmbedsNothing(t *testing.T) {
	srv, _ := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A data dir that cannot be used proves nothing is started there.
	b, err := Open(ctx, Options{
		External: asExternal(srv),
		Embedded: embedded.Options{DataDir: "/dev/null/nothing-here"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Embedded() || b.Err() != nil {
		t.Fatal("external backend reports an embedded etcd")
	}
	if _, err := b.Client().Put(ctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
}

func TestConnectRefusesClearly(t *testing.T) {
	closed := closedPortURL(t)
	tests := []struct {
		name string
		opts ExternalOptions
		want string
	}{
		{"closed port", ExternalOptions{Servers: []string{closed}, DialTimeout: time.Second}, "connection refused"},
		{"not a URL", ExternalOptions{Servers: []string{"127.0.0.1:2379"}}, "want http(s)://host:port"},
		{"unsupported scheme", ExternalOptions{Servers: []string{"unix:///x"}}, "want http(s)://host:port"},
		{"cert without key", ExternalOptions{Servers: []string{closed}, CertFile: "c.pem"}, "both a certificate file and a key file"},
		{"missing CA file", ExternalOptions{Servers: []string{closed}, CAFile: "/nonexistent/ca.pem"}, "etcd TLS"},
		{"no servers", ExternalOptions{}, "no servers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := Connect(ctx, tt.opts)
			if err == nil {
				c.Close()
				t.Fatal("Connect succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// closedPortURL returns an http URL on 127.0.0.1 where nothing listens.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// asExternal names an embedded etcd as an external one: its client URLs
// and the TLS files of its client certificate.
func asExternal(srv *embedded.Server) ExternalOptions {
	f := srv.ClientTLS()
	return ExternalOptions{Servers: srv.ClientURLs(), CAFile: f.CAFile, CertFile: f.CertFile, KeyFile: f.KeyFile}
}
