package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// seedDataDir runs kite once on a fresh data dir, writes keys and stops it,
// and returns a function that copies that data dir for one test: seeding
// once keeps the suite fast.
func seedDataDir(t *testing.T) func(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "seed")
	k := StartKite(t, "server", "--secure-port=0", "--port=0", "--data-dir", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := k.EtcdClient(t)
	for i := range 20 {
		if _, err := c.Put(ctx, fmt.Sprintf("/registry/seed/%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if code, _ := k.Stop(syscall.SIGTERM, shutdownLimit); code != 0 {
		t.Fatalf("seeding kite exited %d: %s", code, k.Stderr())
	}
	return func(t *testing.T) string {
		t.Helper()
		cp := filepath.Join(t.TempDir(), "data")
		if out, err := exec.Command("cp", "-a", dir, cp).CombinedOutput(); err != nil {
			t.Fatalf("copy seeded data dir: %v: %s", err, out)
		}
		return cp
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
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

// supervisedDir returns a fresh directory for a test's server data and
// agent root dirs whose container supervisors the test's end awaits
// (awaitSupervisors) before the directory is removed.
func supervisedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	awaitSupervisors(t, dir)
	return dir
}

// awaitSupervisors, registered before the processes that start pods under
// dir, waits at the test's end (at most 10 s) until no process names dir
// in its command line: a container's supervisor outlives its agent and,
// once its container is killed, writes the container's exit record, which
// must not race the removal of the test's directories.
func awaitSupervisors(t *testing.T, dir string) {
	t.Helper()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for exec.Command("pgrep", "-f", dir).Run() == nil {
			if time.Now().After(deadline) {
				out, _ := exec.Command("pgrep", "-af", dir).Output()
				t.Errorf("processes under %s outlive the test:\n%s", dir, out)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}
