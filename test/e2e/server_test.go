package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kite-project/kite/storage/etcd/etcdtest"
)

// shutdownLimit is what a user waits at most after SIGINT or SIGTERM.
const shutdownLimit = 5 * time.Second

// failLimit bounds a start that must fail: failing must not hang.
const failLimit = 30 * time.Second

func TestRestartKeepsWrittenKeys(t *testing.T) {
	tests := []struct {
		name string
		args []string
		sig  syscall.Signal
	}{
		{"kite server, SIGTERM", []string{"server", "--secure-port=0", "--port=0"}, syscall.SIGTERM},
		{"kite etcd, SIGINT", []string{"etcd"}, syscall.SIGINT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			args := append(tt.args, "--data-dir", dir)

			k := StartKite(t, args...)
			if !strings.Contains(k.Stdout(), "data dir "+dir) {
				t.Errorf("start message does not name the data dir %s:\n%s", dir, k.Stdout())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := k.EtcdClient(t).Put(ctx, "/registry/e2e/key", "value"); err != nil {
				t.Fatalf("put through %s: %v", k.EtcdURL, err)
			}
			stopCleanly(t, k, tt.sig)

			k = StartKite(t, args...)
			r, err := k.EtcdClient(t).Get(ctx, "/registry/e2e/key")
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "value" {
				t.Fatalf("after restart got %v, want the key written before", r.Kvs)
			}
			stopCleanly(t, k, tt.sig)
		})
	}
}

// stopCleanly signals k and checks that it exits in time, with code 0 and
// nothing on stderr.
func stopCleanly(t *testing.T, k *Kite, sig syscall.Signal) {
	t.Helper()
	code, took := k.Stop(sig, shutdownLimit)
	if code != 0 {
		t.Fatalf("exit code %d after %v, want 0\nstderr:\n%s", code, sig, k.Stderr())
	}
	if s := shutdownNoise(k.Stderr()); s != "" {
		t.Errorf("clean shutdown printed on stderr:\n%s", s)
	}
	t.Logf("exited %s after %v", took, sig)
}

// shutdownNoise returns stderr without the one line client-go's REST
// client logs itself, at error level, when a list it is still reading is
// cancelled: a controller's informer listing when the signal comes (under
// load the garbage collector's first lists of every resource can take
// seconds). kube-controller-manager prints the same on such a shutdown;
// the list's error is also returned to the informer, which stops.
func shutdownNoise(stderr string) string {
	var kept []string
	for _, line := range strings.SplitAfter(stderr, "\n") {
		if strings.Contains(line, `"Unexpected error when reading response body" err="context canceled"`) {
			continue
		}
		kept = append(kept, line)
	}
	return strings.Join(kept, "")
}

func TestUnusableDataDirFailsWithOneLine(t *testing.T) {
	seeded := seedDataDir(t)
	tests := []struct {
		name string
		// dir returns the --data-dir to use; it may start a kite that
		// holds it.
		dir  func(t *testing.T) string
		want string
	}{
		{"locked by a running kite", func(t *testing.T) string {
			dir := t.TempDir()
			StartKite(t, "server", "--secure-port=0", "--port=0", "--data-dir", dir)
			return dir
		}, "in use by another process"},
		{"under a regular file", func(t *testing.T) string {
			file := filepath.Join(t.TempDir(), "file")
			writeFile(t, file, []byte("x"))
			return filepath.Join(file, "data")
		}, "not a directory"},
		{"garbage in the WAL", func(t *testing.T) string {
			dir := seeded(t)
			overwrite(t, filepath.Join(dir, "etcd/member/wal/0000000000000000-0000000000000000.wal"), 100, []byte(strings.Repeat("garbage!", 100)))
			return dir
		}, "corrupt"},
		{"garbage file instead of the member dir", func(t *testing.T) string {
			dir := seeded(t)
			if err := os.RemoveAll(filepath.Join(dir, "etcd/member")); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "etcd/member"), []byte("garbage"))
			return dir
		}, "corrupt"},
		{"truncated backend", func(t *testing.T) string {
			dir := seeded(t)
			if err := os.Truncate(filepath.Join(dir, "etcd/member/snap/db"), 100); err != nil {
				t.Fatal(err)
			}
			return dir
		}, "corrupt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.dir(t)
			r := RunKite(t, failLimit, "server", "--port=0", "--data-dir", dir)
			checkOneLineFailure(t, r, tt.want)
		})
	}
}

func TestExternalEtcd(t *testing.T) {
	srv, client := etcdtest.Start(t)
	url := srv.ClientURLs()[0]
	dir := filepath.Join(t.TempDir(), "data")

	f := srv.ClientTLS()
	k := StartKite(t, "server", "--secure-port=0", "--port=0", "--etcd-servers", url, "--data-dir", dir,
		"--etcd-cafile", f.CAFile, "--etcd-certfile", f.CertFile, "--etcd-keyfile", f.KeyFile)
	if k.EtcdURL != url || strings.Contains(k.Stdout(), "embedded") {
		t.Fatalf("kite did not use the external etcd %s:\n%s", url, k.Stdout())
	}
	// The data dir holds the API server's certificates and kubeconfig,
	// but no etcd.
	if _, err := os.Stat(filepath.Join(dir, "etcd")); !os.IsNotExist(err) {
		t.Errorf("%s exists (err %v): something was embedded", filepath.Join(dir, "etcd"), err)
	}
	// Kite's compactor keeps its key in the cluster it was given.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.Put(ctx, "/registry/e2e/key", "v"); err != nil {
		t.Fatal(err)
	}
	stopCleanly(t, k, syscall.SIGTERM)
}

func TestExternalEtcdUnreachableFailsWithOneLine(t *testing.T) {
	r := RunKite(t, failLimit, "server", "--port=0", "--etcd-servers", closedPortURL(t))
	checkOneLineFailure(t, r, "connection refused")
}

// checkOneLineFailure checks that a start failed with exit code 1 and
// exactly one line on stderr containing want, before saying it was ready.
func checkOneLineFailure(t *testing.T, r Result, want string) {
	t.Helper()
	if r.Code != 1 {
		t.Errorf("exit code %d, want 1", r.Code)
	}
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "kite: ") || !strings.Contains(lines[0], want) {
		t.Errorf("stderr is not one line 'kite: ...%s...':\n%s", want, r.Stderr)
	}
	if strings.Contains(r.Stdout, "kite: ready") {
		t.Errorf("kite said it was ready:\n%s", r.Stdout)
	}
	t.Logf("stderr: %s", r.Stderr)
}

// TestRestartAfterKillKeepsAcknowledgedKeys kills kite without warning: the
// kernel drops its lock, and every write etcd acknowledged (fsync on) is
// there after the restart.
func TestRestartAfterKillKeepsAcknowledgedKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	k := StartKite(t, "server", "--secure-port=0", "--port=0", "--data-dir", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := k.EtcdClient(t)
	for i := range 50 {
		if _, err := c.Put(ctx, fmt.Sprintf("/registry/e2e/%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if code, _ := k.Stop(syscall.SIGKILL, shutdownLimit); code == 0 {
		t.Fatal("killed kite exited with code 0")
	}

	k = StartKite(t, "server", "--secure-port=0", "--port=0", "--data-dir", dir)
	r, err := k.EtcdClient(t).Get(ctx, "/registry/e2e/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if r.Count != 50 {
		t.Fatalf("after kill and restart: %d keys, want 50", r.Count)
	}
	stopCleanly(t, k, syscall.SIGTERM)
}

func TestClientPortInUseFailsWithOneLine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := RunKite(t, failLimit, "server", "--port=0", "--data-dir", filepath.Join(t.TempDir(), "data"), "--listen-client-urls", "https://"+l.Addr().String())
	checkOneLineFailure(t, r, "address already in use")
}

func TestShutdownNoiseDropsOnlyCancelledListReads(t *testing.T) {
	cancelled := `E1202 00:12:22.135302 6840 request.go:1198] "Unexpected error when reading response body" err="context canceled" reflector="garbagecollector /v1, Resource=pods"` + "\n"
	other := `E1202 00:12:22.135302 6840 request.go:1198] "Unexpected error when reading response body" err="unexpected EOF"` + "\n"
	panicked := "panic: boom\n"
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{cancelled, ""},
		{cancelled + other + cancelled + panicked, other + panicked},
	} {
		if got := shutdownNoise(tt.in); got != tt.want {
			t.Errorf("shutdownNoise(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestEmbeddedEtcdServesOnlyTheAPIServer creates a Secret through the API
// of kite server and reads its key from etcd's port on 127.0.0.1, as any
// local process or pod could try: a plain client gets nothing, the client
// certificate the data dir holds for the API server gets the Secret.
func TestEmbeddedEtcdServesOnlyTheAPIServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	k := StartKite(t, "server", "--secure-port=0", "--port=0", "--data-dir", dir)
	if !strings.HasPrefix(k.EtcdURL, "https://127.0.0.1:") || k.EtcdTLS.CertFile == "" {
		t.Fatalf("etcd at %q with client certificate %q, want https on 127.0.0.1 with one:\n%s", k.EtcdURL, k.EtcdTLS.CertFile, k.Stdout())
	}
	cs := clientsetFor(t, filepath.Join(dir, "kubeconfig"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"}, StringData: map[string]string{"password": "hunter2"}}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const key = "/registry/secrets/default/db"
	plain, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + strings.TrimPrefix(k.EtcdURL, "https://")}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err == nil {
		defer plain.Close()
		pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
		defer pcancel()
		if r, err := plain.Get(pctx, key); err == nil {
			t.Errorf("a plain client on 127.0.0.1 read %s: %d keys", key, len(r.Kvs))
		}
	}
	r, err := k.EtcdClient(t).Get(ctx, key)
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("the API server's client certificate: %v, %v; want the Secret's key", r, err)
	}
	stopCleanly(t, k, syscall.SIGTERM)
}
