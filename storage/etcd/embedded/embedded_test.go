package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
)

func start(t *testing.T, dir string) (*Server, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Start(ctx, Options{DataDir: dir, UnsafeNoFsync: true, StartTimeout: 30 * time.Second})
}

func mustStart(t *testing.T, dir string) *Server {
	t.Helper()
	s, err := start(t, dir)
	if err != nil {
		t.Fatalf("start on %s: %v", dir, err)
	}
	return s
}

// seed starts etcd on dir, writes n keys and stops it cleanly.
func seed(t *testing.T, dir string, n int) {
	t.Helper()
	s := mustStart(t, dir)
	defer s.Close()
	c := mustClient(t, s)
	defer c.Close()
	putKeys(t, c, n, "v")
}

func mustClient(t *testing.T, s *Server) *clientv3.Client {
	t.Helper()
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// putKeys writes value under the n keys /k/0, /k/1, ...
func putKeys(t *testing.T, c *clientv3.Client, n int, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		if _, err := c.Put(ctx, fmt.Sprintf("/k/%d", i), value); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRestartKeepsEveryKey(t *testing.T) {
	dir := t.TempDir()
	seed(t, dir, 20)
	s := mustStart(t, dir)
	defer s.Close()
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Get(ctx, "/k/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 20 {
		t.Fatalf("after restart got %d keys, want 20", len(r.Kvs))
	}
}

func TestSecondStartOnSameDirIsLocked(t *testing.T) {
	dir := t.TempDir()
	s := mustStart(t, dir)
	_, err := start(t, dir)
	if !errors.Is(err, ErrDataDirLocked) {
		t.Fatalf("second start: got %v, want ErrDataDirLocked", err)
	}
	s.Close()
	s.Close() // idempotent
	// The lock goes with Close.
	s = mustStart(t, dir)
	s.Close()
}

func TestUnusableDataDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := start(t, filepath.Join(file, "data"))
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("data dir under a file: got %v, want a 'not a directory' error", err)
	}
}

func TestCorruptDataDirIsErrCorrupt(t *testing.T) {
	const walFile = "etcd/member/wal/0000000000000000-0000000000000000.wal"
	const dbFile = "etcd/member/snap/db"
	tests := []struct {
		name    string
		corrupt func(t *testing.T, dir string)
		want    string
	}{
		{"garbage in the middle of the WAL", func(t *testing.T, dir string) {
			overwrite(t, filepath.Join(dir, walFile), 200, []byte(strings.Repeat("GARBAGE!", 64)))
		}, "WAL"},
		{"WAL replaced by random bytes", func(t *testing.T, dir string) {
			overwrite(t, filepath.Join(dir, walFile), 0, []byte(strings.Repeat("\x17\x99garbage", 400)))
		}, "WAL"},
		{"WAL cut short", func(t *testing.T, dir string) {
			must(t, os.Truncate(filepath.Join(dir, walFile), 1000))
		}, "but the backend has applied entry"},
		{"no WAL files", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, walFile)))
		}, "no WAL files"},
		{"backend truncated to 100 bytes", func(t *testing.T, dir string) {
			must(t, os.Truncate(filepath.Join(dir, dbFile), 100))
		}, "backend"},
		{"backend truncated after its meta pages", func(t *testing.T, dir string) {
			must(t, os.Truncate(filepath.Join(dir, dbFile), 3*4096))
		}, "backend"},
		{"backend overwritten", func(t *testing.T, dir string) {
			overwrite(t, filepath.Join(dir, dbFile), 0, []byte(strings.Repeat("garbage!", 2048)))
		}, "backend"},
		{"member is a file", func(t *testing.T, dir string) {
			must(t, os.RemoveAll(filepath.Join(dir, "etcd/member")))
			must(t, os.WriteFile(filepath.Join(dir, "etcd/member"), []byte("x"), 0o600))
		}, "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			seed(t, dir, 50)
			tt.corrupt(t, dir)
			s, err := start(t, dir)
			if err == nil {
				s.Close()
				t.Fatal("start on a corrupt data dir succeeded")
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want ErrCorrupt naming %q", err, tt.want)
			}
			// A failed start releases the lock.
			if _, err := lockDataDir(dir); err != nil {
				t.Fatalf("lock after failed start: %v", err)
			}
		})
	}
}

func TestBackendMissingOrEmptyIsRebuiltFromWAL(t *testing.T) {
	const dbFile = "etcd/member/snap/db"
	tests := []struct {
		name   string
		damage func(dir string) error
	}{
		{"removed", func(dir string) error { return os.Remove(filepath.Join(dir, dbFile)) }},
		{"empty", func(dir string) error { return os.Truncate(filepath.Join(dir, dbFile), 0) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			seed(t, dir, 5)
			must(t, tt.damage(dir))
			s := mustStart(t, dir)
			defer s.Close()
			c, err := s.Client()
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := c.Get(ctx, "/k/", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Kvs) != 5 {
				t.Fatalf("got %d keys after rebuilding the backend, want 5", len(r.Kvs))
			}
		})
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

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestTornWALTailIsNotCorruption writes what a crash in the middle of a
// WAL append leaves (a record header and part of its body, the rest of the
// sectors still zero) after the last record: etcd repairs that itself, so
// Start must accept it and every acknowledged key must be there.
func TestTornWALTailIsNotCorruption(t *testing.T) {
	dir := t.TempDir()
	seed(t, dir, 10)
	walPath := filepath.Join(dir, "etcd/member/wal/0000000000000000-0000000000000000.wal")
	end := endOfRecords(t, walPath)
	torn := make([]byte, 8+100)
	binary.LittleEndian.PutUint64(torn, 1000) // claims 1000 bytes; 100 arrive
	for i := 8; i < len(torn); i++ {
		torn[i] = 0xab
	}
	overwrite(t, walPath, end, torn)

	s := mustStart(t, dir)
	defer s.Close()
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Get(ctx, "/k/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 10 {
		t.Fatalf("got %d keys after a torn WAL tail, want 10", len(r.Kvs))
	}
	// etcd keeps what it cut off: proof that the tail was seen as torn.
	if _, err := os.Stat(walPath + ".broken"); err != nil {
		t.Fatalf("etcd did not repair the torn tail: %v", err)
	}
}

// endOfRecords returns the offset just after the last valid record of a
// WAL file.
func endOfRecords(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := wal.NewDecoder(fileutil.NewFileReader(f))
	rec := &walpb.Record{}
	for {
		if err := dec.Decode(rec); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("decode %s: %v", path, err)
			}
			return dec.LastOffset()
		}
	}
}
