package supervisor

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLogWriterRotationWithConcurrentStreams drives the writer itself
// with a clock that moves a second per entry, from two goroutines (stdout
// and stderr), so that it rotates on nearly every entry while its
// background compression runs.
func TestLogWriterRotationWithConcurrentStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c", "0.log")
	const maxFiles = 4
	w, err := openLogWriter(path, 1000, maxFiles)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	w.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Second)
		return clock
	}
	var wg sync.WaitGroup
	for _, stream := range []string{"stdout", "stderr"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				if err := w.writeEntry(stream, false, []byte(stream+"-"+strconv.Itoa(i)+"-"+strings.Repeat("z", 60))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(path + "*")
	sort.Strings(files) // path, then path.<time>…: rotated ones in time order
	files = append(files[1:], files[0])
	if len(files) > maxFiles {
		t.Errorf("%d files %v, want at most %d", len(files), files, maxFiles)
	}
	// Per stream, the kept entries are a run without gaps or repeats, and
	// the newest file ends with one stream's last entry.
	last := map[string]int{}
	var final logEntry
	for i, name := range files {
		if strings.HasSuffix(name, ".tmp") {
			t.Errorf("leftover %s", name)
			continue
		}
		if gz := strings.HasSuffix(name, ".gz"); gz != (i < len(files)-2) {
			t.Errorf("%s: compressed=%v; all rotated files but the newest should be", name, gz)
		}
		for _, l := range parseLog(t, readMaybeGzip(t, name)) {
			n, _ := strconv.Atoi(strings.Split(l.content, "-")[1])
			if prev, ok := last[l.stream]; ok && n != prev+1 {
				t.Errorf("%s: %s entry %d follows %d", name, l.stream, n, prev)
			}
			last[l.stream] = n
			final = l
		}
	}
	if !strings.HasPrefix(final.content, final.stream+"-299-") {
		t.Errorf("newest entry %q, want a stream's last (299)", final.content)
	}
}

type logEntry struct{ stream, content string }

// parseLog reads CRI log entries: "<ts> <stream> <F|P> <content>".
func parseLog(t *testing.T, log string) []logEntry {
	t.Helper()
	var out []logEntry
	for _, l := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		if l == "" {
			continue
		}
		parts := strings.SplitN(l, " ", 4)
		if len(parts) != 4 {
			t.Fatalf("log line %q: want 4 fields", l)
		}
		if _, err := time.Parse(CRITimeFormat, parts[0]); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, logEntry{stream: parts[1], content: parts[3]})
	}
	return out
}

func readMaybeGzip(t *testing.T, name string) string {
	t.Helper()
	fh, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var r io.Reader = fh
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(fh)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r = zr
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return string(b)
}
