package podsync

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	write := func(lines ...string) string {
		p := filepath.Join(dir, fmt.Sprint(len(lines))+".log")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const ts = "2026-01-01T00:00:00.000000000Z"
	if got := logTail(write(ts+" stdout F hello", ts+" stderr P par", ts+" stderr F tial", "garbage")); got != "hello\npartial\n" {
		t.Errorf("tail = %q", got)
	}
	var many []string
	for i := range 100 {
		many = append(many, fmt.Sprintf("%s stdout F line %d", ts, i))
	}
	got := logTail(write(many...))
	if !strings.HasPrefix(got, "line 20\n") || !strings.HasSuffix(got, "line 99\n") {
		t.Errorf("tail of 100 lines starts %q ends %q; want lines 20 to 99", got[:10], got[len(got)-10:])
	}
	var long []string
	for range 90 {
		long = append(long, ts+" stdout F "+strings.Repeat("x", 99))
	}
	if got := logTail(write(long...)); len(got) != 2048 {
		t.Errorf("tail of long lines has %d bytes, want 2048", len(got))
	}
	if logTail(filepath.Join(dir, "missing.log")) != "" {
		t.Error("a missing log has a tail")
	}
}
