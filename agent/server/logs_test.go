package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// criLine is one CRI log line written at t.
func criLine(t time.Time, stream, tag, content string) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") + " " + stream + " " + tag + " " + content + "\n"
}

func TestParseEntry(t *testing.T) {
	ts := "2026-12-01T10:00:00.123456789Z"
	cases := []struct {
		line    string
		ok      bool
		stream  string
		partial bool
		content string
	}{
		{ts + " stdout F hello world", true, "stdout", false, "hello world"},
		{ts + " stderr P part", true, "stderr", true, "part"},
		{ts + " stdout F", true, "stdout", false, ""},
		{ts + " stdout F  two spaces", true, "stdout", false, " two spaces"},
		{"not-a-time stdout F x", false, "", false, ""},
		{ts + " stdin F x", false, "", false, ""},
		{ts, false, "", false, ""},
		// Other runtimes' timestamps (containerd's RFC 3339 trims zeros,
		// a zone may be written as an offset): the general parse.
		{"2026-12-01T10:00:00.1234Z stdout F short", true, "stdout", false, "short"},
		{"2026-12-01T10:00:00.123456789+01:00 stderr F zoned", true, "stderr", false, "zoned"},
		{"2026-12-01T10:00:00.123456789Z stdout X bad tag", true, "stdout", false, "bad tag"},
	}
	for _, c := range cases {
		e, err := parseEntry([]byte(c.line))
		if (err == nil) != c.ok {
			t.Errorf("parseEntry(%q) error = %v, want ok %v", c.line, err, c.ok)
			continue
		}
		if c.ok && (e.stream != c.stream || e.partial != c.partial || string(e.content) != c.content) {
			t.Errorf("parseEntry(%q) = %s %v %q", c.line, e.stream, e.partial, e.content)
		}
	}
}

func gz(t *testing.T, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// TestReadLogsOptions reads a log of three files (a gzipped rotation, a
// plain one, the current file) with each option.
func TestReadLogsOptions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	os.WriteFile(path+".20261201-100001.gz", gz(t, criLine(at(1), "stdout", "F", "one")+criLine(at(2), "stderr", "F", "two")), 0o644)
	os.WriteFile(path+".20261201-100003", []byte(criLine(at(3), "stdout", "P", "thr")+criLine(at(3), "stdout", "F", "ee")), 0o644)
	os.WriteFile(path+".20261201-100009.tmp", []byte(criLine(at(9), "stdout", "F", "temporary")), 0o644)
	os.WriteFile(path, []byte(criLine(at(4), "stdout", "F", "four")+"garbage line\n"+criLine(at(5), "stdout", "F", "five")), 0o644)
	cases := []struct {
		name string
		opts LogOptions
		want string
	}{
		{"all", LogOptions{Tail: -1}, "one\ntwo\nthree\nfour\nfive\n"},
		{"tail 2", LogOptions{Tail: 2}, "four\nfive\n"},
		{"tail keeps a line made of partials whole", LogOptions{Tail: 3}, "three\nfour\nfive\n"},
		{"tail more than there is", LogOptions{Tail: 100}, "one\ntwo\nthree\nfour\nfive\n"},
		{"tail 0", LogOptions{Tail: 0}, ""},
		{"since", LogOptions{Tail: -1, Since: at(3)}, "three\nfour\nfive\n"},
		{"since and tail", LogOptions{Tail: 1, Since: at(2)}, "five\n"},
		{"limit bytes", LogOptions{Tail: -1, LimitBytes: 6}, "one\ntw"},
		{"timestamps", LogOptions{Tail: 1, Timestamps: true}, "2026-12-01T10:00:05.000000000Z five\n"},
		{"timestamps once per line", LogOptions{Tail: -1, Since: at(3), Timestamps: true, LimitBytes: 37},
			"2026-12-01T10:00:03.000000000Z three\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := ReadLogs(t.Context(), path, c.opts, func() bool { return false }, &out); err != nil {
				t.Fatal(err)
			}
			if out.String() != c.want {
				t.Errorf("got %q, want %q", out.String(), c.want)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe to read while ReadLogs writes.
type syncBuffer struct {
	mu  chan struct{}
	buf bytes.Buffer
}

func newSyncBuffer() *syncBuffer { b := &syncBuffer{mu: make(chan struct{}, 1)}; return b }
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.Write(p)
}
func (b *syncBuffer) String() string {
	b.mu <- struct{}{}
	defer func() { <-b.mu }()
	return b.buf.String()
}

// TestReadLogsFollowsAcrossRotation follows a log while it is appended
// to, rotated and appended to again, and ends when the container stops.
func TestReadLogsFollowsAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	now := time.Now()
	os.WriteFile(path, []byte(criLine(now, "stdout", "F", "before")), 0o644)
	var running atomic.Bool
	running.Store(true)
	out := newSyncBuffer()
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	go func() { done <- ReadLogs(ctx, path, LogOptions{Follow: true, Tail: -1}, running.Load, out) }()
	waitFor(t, out, "before\n")
	appendTo(t, path, criLine(now, "stdout", "F", "appended"))
	waitFor(t, out, "before\nappended\n")
	if err := os.Rename(path, path+".20261201-100000"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path+".20261201-100000", criLine(now, "stdout", "F", "late in the old file"))
	appendTo(t, path, criLine(now, "stdout", "F", "new file"))
	waitFor(t, out, "before\nappended\nlate in the old file\nnew file\n")
	appendTo(t, path, criLine(now, "stdout", "F", "last words"))
	running.Store(false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadLogs still follows a stopped container")
	}
	if got := out.String(); got != "before\nappended\nlate in the old file\nnew file\nlast words\n" {
		t.Errorf("followed %q", got)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

func waitFor(t *testing.T, b *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for b.String() != want {
		if time.Now().After(deadline) || !strings.HasPrefix(want, b.String()) {
			t.Fatalf("followed %q, want %q", b.String(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
