package process

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kite-project/kite/agent/runtime/process/supervisor"
)

func TestLogIsCRIFormatWithPartialLines(t *testing.T) {
	f := newFixture(t, Options{NoCgroups: true})
	// 40000 bytes on one line: P 16384, P 16384, F 7232; then a short
	// stderr line, a CRLF line and an unterminated last line.
	script := `head -c 40000 /dev/zero | tr '\0' x; echo; echo oops >&2; printf 'dos\r\n'; printf tail`
	id := f.run(containerConfig("logs", "sh", "-c", script))
	f.waitExited(id, 10*time.Second)
	b, err := os.ReadFile(filepath.Join(f.logDir, "logs", "0.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := parseCRILog(t, string(b))
	var stdout []criLine
	var stderr []string
	for _, l := range lines {
		if l.stream == "stdout" {
			stdout = append(stdout, l)
		} else {
			stderr = append(stderr, l.content)
		}
	}
	type piece struct {
		partial bool
		size    int
	}
	var got []piece
	for _, l := range stdout[:3] {
		if strings.Trim(l.content, "x") != "" {
			t.Fatalf("long line piece holds %q", l.content[:20])
		}
		got = append(got, piece{l.partial, len(l.content)})
	}
	want := []piece{{true, supervisor.MaxLogLine}, {true, supervisor.MaxLogLine}, {false, 40000 - 2*supervisor.MaxLogLine}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("piece %d of the long line: %+v, want %+v", i, got[i], want[i])
		}
	}
	// The unterminated last line is P, as containerd writes it: a reader
	// adds no newline the container did not write.
	if len(stdout) != 5 || stdout[3].content != "dos" || stdout[3].partial || stdout[4].content != "tail" || !stdout[4].partial {
		t.Errorf("stdout after the long line: %+v, want F dos, P tail", stdout[3:])
	}
	if len(stderr) != 1 || stderr[0] != "oops" {
		t.Errorf("stderr entries %q, want [oops]", stderr)
	}
	for i := 1; i < len(lines); i++ {
		if lines[i].ts.Before(lines[i-1].ts) {
			t.Errorf("entry %d is older than entry %d", i, i-1)
		}
	}
}

func TestLogRotatesKeepingMaxFiles(t *testing.T) {
	const maxFiles = 3
	f := newFixture(t, Options{NoCgroups: true, ContainerLogMaxSize: 2048, ContainerLogMaxFiles: maxFiles})
	// About 3 KiB a second for 4.5 s: a rotation in each second, after
	// which older files are compressed and then deleted.
	script := `i=0; while [ $i -lt 90 ]; do i=$((i+1)); echo "line-$i-$(head -c 40 /dev/zero | tr '\0' y)"; sleep 0.05; done`
	logPath := filepath.Join(f.logDir, "rot", "0.log")
	// A follower that keeps the file it opened first: rotation renames
	// that file rather than truncating it, so it reads on to the end.
	id := f.run(containerConfig("rot", "sh", "-c", script))
	var first *os.File
	for deadline := time.Now().Add(5 * time.Second); first == nil; {
		first, _ = os.Open(logPath)
		if time.Now().After(deadline) {
			t.Fatal("no log file")
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer first.Close()
	// 4.5 s of sleeps and 180 short processes: slow on a loaded machine
	// (20 s was not enough at load 14).
	f.waitExited(id, 90*time.Second)

	files, _ := filepath.Glob(logPath + "*")
	if len(files) > maxFiles {
		t.Errorf("%d log files %v, want at most %d", len(files), files, maxFiles)
	}
	var rotated []string
	for _, name := range files {
		if name != logPath {
			rotated = append(rotated, name)
		}
	}
	if len(rotated) < 2 {
		t.Fatalf("rotated files %v: want at least 2 rotations", rotated)
	}
	sort.Strings(rotated)
	for i, name := range rotated {
		base := strings.TrimSuffix(strings.TrimPrefix(name, logPath+"."), ".gz")
		if _, err := time.ParseInLocation(supervisor.RotatedTimeFormat, base, time.Local); err != nil {
			t.Errorf("rotated file %s is not named <log>.YYYYMMDD-HHMMSS: %v", name, err)
		}
		if gz := strings.HasSuffix(name, ".gz"); gz != (i < len(rotated)-1) {
			t.Errorf("rotated file %s: compressed=%v; all but the newest should be", name, gz)
		}
	}
	// Every kept file is CRI-formatted and together they hold the last
	// lines in order, ending with line 90.
	var all []criLine
	for _, name := range append(rotated, logPath) {
		all = append(all, parseCRILog(t, readMaybeGzip(t, name))...)
	}
	last := 0
	for _, l := range all {
		n, err := strconv.Atoi(strings.Split(l.content, "-")[1])
		if err != nil || n != last+1 && last != 0 {
			t.Fatalf("entry %q follows line %d", l.content, last)
		}
		last = n
	}
	if last != 90 {
		t.Errorf("last line %d, want 90", last)
	}
	b, _ := io.ReadAll(first)
	if !strings.Contains(string(b), "line-1-") {
		t.Errorf("the follower's first file does not start at line 1")
	}
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
