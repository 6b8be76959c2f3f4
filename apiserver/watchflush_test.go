package apiserver

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// countingWriter records each write it gets.
type countingWriter struct{ writes []string }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes = append(c.writes, string(p))
	return len(p), nil
}

func TestBatchWriterWritesABatchAtOnce(t *testing.T) {
	var pool sync.Pool
	out := &countingWriter{}
	b := &batchWriter{w: out, pool: &pool}
	for _, ev := range []string{"a\n", "b\n", "c\n"} {
		b.Write([]byte(ev))
	}
	if len(out.writes) != 0 {
		t.Fatalf("%d writes before the flush, want none", len(out.writes))
	}
	if err := b.writeOut(); err != nil {
		t.Fatal(err)
	}
	if len(out.writes) != 1 || out.writes[0] != "a\nb\nc\n" {
		t.Fatalf("writes %q, want one of the three events", out.writes)
	}
	if b.buf != nil {
		t.Error("an idle watch still holds its buffer")
	}
	if buf, _ := pool.Get().(*bytes.Buffer); buf == nil || buf.Len() != 0 {
		t.Error("the buffer did not go back to the pool empty")
	}
	if err := b.writeOut(); err != nil || len(out.writes) != 1 {
		t.Errorf("an empty flush wrote (%v, %d writes)", err, len(out.writes))
	}
}

func TestBatchWriterWritesOutPastItsBound(t *testing.T) {
	var pool sync.Pool
	out := &countingWriter{}
	b := &batchWriter{w: out, pool: &pool}
	event := []byte(strings.Repeat("x", 100<<10))
	for range 3 {
		b.Write(event)
	}
	if len(out.writes) != 1 || len(out.writes[0]) != 3*len(event) {
		t.Fatalf("%d writes, want one of all three events once past %d bytes", len(out.writes), maxBatch)
	}
	huge := []byte(strings.Repeat("y", 2*maxPooledBatch))
	b.Write(huge)
	if got, _ := pool.Get().(*bytes.Buffer); got != nil && got.Cap() > maxPooledBatch {
		t.Error("a buffer grown past the bound went back to the pool")
	}
}
