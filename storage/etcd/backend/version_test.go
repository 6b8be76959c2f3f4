package backend

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

func TestCheckVersion(t *testing.T) {
	tests := []struct {
		version string
		wantErr string // "" for accepted
	}{
		{"3.4.31", ""},
		{"3.4.37", ""},
		{"3.5.13", ""},
		{"3.5.21", ""},
		{"3.6.0", ""},
		{"3.7.3", ""},
		{"4.0.0", ""},
		{"3.4.30", "etcd 3.4.30 is too old: Kite needs 3.4.31 or later"},
		{"3.4.24", "etcd 3.4.24 is too old: Kite needs 3.4.31 or later"},
		{"3.4.0", "etcd 3.4.0 is too old: Kite needs 3.4.31 or later"},
		{"3.5.12", "etcd 3.5.12 is too old: Kite needs 3.5.13 or later"},
		{"3.5.8", "etcd 3.5.8 is too old: Kite needs 3.5.13 or later"},
		{"3.5.0", "etcd 3.5.0 is too old: Kite needs 3.5.13 or later"},
		{"3.5.13-rc.0", "etcd 3.5.13-rc.0 is too old: Kite needs 3.5.13 or later"},
		{"3.3.27", "etcd 3.3.27 is too old: Kite needs 3.4.31 or later"},
		{"2.3.8", "etcd 2.3.8 is too old"},
		{"", `etcd version "" cannot be read`},
		{"3.5", `etcd version "3.5" cannot be read`},
		{"v3.5.9", `etcd version "v3.5.9" cannot be read`},
	}
	for _, tc := range tests {
		t.Run(tc.version, func(t *testing.T) {
			err := CheckVersion(tc.version)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("accepted, want %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestConnectChecksTheRealEtcdVersion: the embedded etcd that Kite ships
// passes the check that Connect makes of an external one.
func TestConnectChecksTheRealEtcdVersion(t *testing.T) {
	srv, _ := etcdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, asExternal(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Status(ctx, srv.ClientURLs()[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckVersion(st.Version); err != nil {
		t.Fatalf("the embedded etcd %s: %v", st.Version, err)
	}
	if err := checkServerVersions(ctx, c, append([]string{closedPortURL(t)}, srv.ClientURLs()...), time.Second); err != nil {
		t.Fatalf("a server down besides one that answers: %v", err)
	}
	if err := checkServerVersions(ctx, c, []string{closedPortURL(t)}, time.Second); err == nil {
		t.Fatal("no server answered, and the check passed")
	}
}
