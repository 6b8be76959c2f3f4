package embedded

import (
	"context"
	"testing"
	"time"
)

func TestStartPutGetRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Start(ctx, Options{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(s.ClientURLs())
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.Put(cctx, "/k", "v"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	s.Close()
	s, err = Start(ctx, Options{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err = s.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Get(cctx, "/k")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "v" {
		t.Fatalf("after restart got %v", r.Kvs)
	}
}
