package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kite-project/kite/storage/etcd/backend"
	"github.com/kite-project/kite/storage/etcd/embedded"
)

// TestFlagMistakesFailBeforeStarting checks flag combinations that make no
// sense: each is refused with a message naming the flag, and nothing starts
// (none of them names a usable data dir or etcd).
func TestFlagMistakesFailBeforeStarting(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"embedded flag with external etcd", []string{"server", "--etcd-servers", "http://127.0.0.1:1", "--listen-client-urls", "http://127.0.0.1:0"}, "--listen-client-urls configures the embedded etcd"},
		{"TLS files without external etcd", []string{"server", "--etcd-cafile", "ca.pem"}, "need --etcd-servers"},
		{"unknown flag", []string{"server", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{"positional argument", []string{"etcd", "extra"}, `unknown command "extra"`},
		{"malformed interval", []string{"server", "--etcd-compaction-interval", "often"}, "invalid argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(tt.args)
			err := root.ExecuteContext(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(out.String(), "kite: ready") {
				t.Fatalf("kite started:\n%s", out.String())
			}
		})
	}
}

// TestSignalDuringStartIsACleanExit: a signal that arrives while etcd is
// still starting is a request to stop, not an error.
func TestSignalDuringStartIsACleanExit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	opts := serverOptions{etcd: backend.Options{Embedded: embedded.Options{DataDir: t.TempDir(), UnsafeNoFsync: true}}}
	if err := runServer(ctx, &out, opts); err != nil {
		t.Fatalf("runServer with a cancelled context: %v", err)
	}
}
