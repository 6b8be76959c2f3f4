package server

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// LogOptions is what /containerLogs was asked, decoded from v1.PodLogOptions.
type LogOptions struct {
	Follow     bool
	Timestamps bool
	// Since drops entries older than it; zero keeps all.
	Since time.Time
	// Tail keeps the last Tail lines; negative keeps all.
	Tail int64
	// LimitBytes stops after that many bytes; zero or less is no limit.
	LimitBytes int64
	// Stdout and Stderr, when set, receive the entries of their stream
	// only (attach); else all go to ReadLogs' writer.
	Stdout, Stderr io.Writer
}

// NewLogOptions turns the API's options into LogOptions; now anchors
// sinceSeconds.
func NewLogOptions(o *v1.PodLogOptions, now time.Time) LogOptions {
	lo := LogOptions{Follow: o.Follow, Timestamps: o.Timestamps, Tail: -1}
	switch {
	case o.SinceSeconds != nil:
		lo.Since = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	case o.SinceTime != nil:
		lo.Since = o.SinceTime.Time
	}
	if o.TailLines != nil {
		lo.Tail = *o.TailLines
	}
	if o.LimitBytes != nil {
		lo.LimitBytes = *o.LimitBytes
	}
	return lo
}

// entry is one line of a CRI log file: "<RFC3339Nano> <stream> <F|P> <content>".
type entry struct {
	rawTS   []byte // the timestamp as written
	stream  string
	partial bool
	content []byte
}

// fixedTS is the width of the process runtime's timestamps: UTC with
// nine fractional digits, so that its lines' fields are at known offsets.
const fixedTS = len("2006-01-02T15:04:05.000000000Z")

// parseEntry splits one CRI log line (without its newline).
func parseEntry(line []byte) (entry, error) {
	// The process runtime's own lines, most of a long read, without the
	// searches: "<fixedTS> stdout F " is 40 bytes.
	if len(line) >= fixedTS+10 && line[fixedTS] == ' ' && line[fixedTS+7] == ' ' && line[fixedTS+9] == ' ' &&
		line[4] == '-' && line[10] == 'T' && line[fixedTS-1] == 'Z' {
		stream, tag := line[fixedTS+1:fixedTS+7], line[fixedTS+8]
		if (string(stream) == "stdout" || string(stream) == "stderr") && (tag == 'F' || tag == 'P') {
			e := entry{rawTS: line[:fixedTS], stream: "stdout", partial: tag == 'P', content: line[fixedTS+10:]}
			if string(stream) == "stderr" {
				e.stream = "stderr"
			}
			return e, nil
		}
	}
	var e entry
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return e, fmt.Errorf("log line %q: no timestamp", line)
	}
	if len(ts) < len("2006-01-02T15:04:05Z") || ts[4] != '-' || ts[10] != 'T' {
		return e, fmt.Errorf("log line timestamp %q: not RFC 3339", ts)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok || (string(stream) != "stdout" && string(stream) != "stderr") {
		return e, fmt.Errorf("log line %q: no stream", line)
	}
	tag, content, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		// "<ts> stdout F" with nothing after the tag is an empty line.
		tag, content = rest, nil
	}
	// The timestamp is parsed only where it is compared (since): most
	// reads never need it, and parsing costs more than the rest.
	e.rawTS, e.content = ts, content
	if string(stream) == "stderr" {
		e.stream = "stderr"
	} else {
		e.stream = "stdout"
	}
	e.partial = bytes.HasPrefix(tag, []byte("P"))
	return e, nil
}

// logFiles lists a container instance's log in write order: the rotated
// files (<log>.<timestamp>, gzipped or not) oldest first, then <log>.
func logFiles(path string) ([]string, error) {
	rotated, err := filepath.Glob(globEscape(path) + ".*")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range rotated {
		if !strings.HasSuffix(f, ".tmp") {
			files = append(files, f)
		}
	}
	sort.Strings(files) // timestamps sort in time order; ".gz" does not change that
	return append(files, path), nil
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// logWriter applies timestamps and limitBytes to the entries it is given.
type logWriter struct {
	w          io.Writer
	split      bool // by stream, to stdout and stderr
	stdout     io.Writer
	stderr     io.Writer
	timestamps bool
	remaining  int64 // <0: no limit
	lineStart  bool
	buf        []byte
	// direct, if set, is the buffer under w: entries that need no
	// timestamp, limit or split go straight into it, without the copy
	// into buf (a whole log read is mostly this).
	direct *bufio.Writer
}

var errLimitReached = errors.New("limitBytes reached")

func (lw *logWriter) write(e entry) error {
	if lw.direct != nil && !lw.timestamps && !lw.split && lw.remaining < 0 {
		lw.lineStart = !e.partial
		_, err := lw.direct.Write(e.content)
		if err == nil && !e.partial {
			err = lw.direct.WriteByte('\n')
		}
		return err
	}
	b := lw.buf[:0]
	defer func() { lw.buf = b[:0] }()
	if lw.timestamps && lw.lineStart {
		b = append(b, e.rawTS...)
		b = append(b, ' ')
	}
	b = append(b, e.content...)
	if !e.partial {
		b = append(b, '\n')
	}
	lw.lineStart = !e.partial
	if lw.split {
		w := lw.stdout
		if e.stream == "stderr" {
			w = lw.stderr
		}
		if w == nil {
			return nil
		}
		_, err := w.Write(b)
		flush(w)
		return err
	}
	if lw.remaining >= 0 && int64(len(b)) >= lw.remaining {
		b = b[:lw.remaining]
		lw.remaining = 0
		_, err := lw.w.Write(b)
		return errors.Join(err, errLimitReached)
	}
	if lw.remaining > 0 {
		lw.remaining -= int64(len(b))
	}
	_, err := lw.w.Write(b)
	return err
}

// logBuffer sizes the reads of a log file and the writes to the
// client: 256 KiB makes a 100 MB read a few hundred syscalls each way
// rather than thousands.
const logBuffer = 256 << 10

// followPoll is how often a followed log is looked at for more.
const followPoll = 50 * time.Millisecond

// ReadLogs writes the log at path (and its rotated files) to w as opts
// ask. With Follow it keeps writing what comes until running says the
// container stopped and all was read, or ctx ends; a rotation of path is
// followed to the new file.
func ReadLogs(ctx context.Context, path string, opts LogOptions, running func() bool, w io.Writer) error {
	bw := bufio.NewWriterSize(w, logBuffer)
	defer bw.Flush()
	out := bufferedFlusher{bw: bw, next: w}
	lw := &logWriter{w: out, direct: bw, timestamps: opts.Timestamps, remaining: -1, lineStart: true,
		split: opts.Stdout != nil || opts.Stderr != nil, stdout: opts.Stdout, stderr: opts.Stderr}
	if opts.LimitBytes > 0 {
		lw.remaining = opts.LimitBytes
	}
	files, err := logFiles(path)
	if err != nil {
		return err
	}
	var tail []entry // the last opts.Tail lines, when tailing
	emit := func(e entry) error {
		if !opts.Since.IsZero() {
			ts, err := time.Parse(time.RFC3339Nano, string(e.rawTS))
			if err != nil || ts.Before(opts.Since) {
				return nil
			}
		}
		if opts.Tail >= 0 {
			// Kept past this read: copied out of the reader's buffer.
			e.rawTS = append([]byte(nil), e.rawTS...)
			e.content = append([]byte(nil), e.content...)
			tail = append(tail, e)
			return nil
		}
		return lw.write(e)
	}
	trimTail := func() {
		// Keep the entries of the last Tail complete lines (a partial
		// entry belongs to the line its F ends).
		lines, i := int64(0), len(tail)
		for i > 0 {
			if !tail[i-1].partial {
				if lines == opts.Tail {
					break
				}
				lines++
			}
			i--
		}
		tail = tail[i:]
	}
	var cur *os.File
	var rd *bufio.Reader
	defer func() {
		if cur != nil {
			cur.Close()
		}
	}()
	for i, name := range files {
		f, err := os.Open(name)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && i < len(files)-1 {
				continue // removed by rotation meanwhile
			}
			return fmt.Errorf("open log %s: %w", name, err)
		}
		var r io.Reader = f
		if strings.HasSuffix(name, ".gz") {
			gz, err := gzip.NewReader(f)
			if err != nil {
				f.Close()
				return fmt.Errorf("open log %s: %w", name, err)
			}
			r = gz
		}
		br := bufio.NewReaderSize(r, logBuffer)
		if err := readEntries(br, emit, func() { trimTail() }, opts.Tail >= 0); err != nil && !errors.Is(err, io.EOF) {
			f.Close()
			return finish(err)
		}
		if i == len(files)-1 {
			cur, rd = f, br
		} else {
			f.Close()
		}
	}
	if opts.Tail >= 0 {
		trimTail()
		for _, e := range tail {
			if err := lw.write(e); err != nil {
				return finish(err)
			}
		}
		opts.Tail = -1
	}
	flush(out)
	if !opts.Follow {
		return nil
	}
	for {
		err := readEntries(rd, emit, nil, false)
		if err != nil && !errors.Is(err, io.EOF) {
			return finish(err)
		}
		flush(out)
		if rotated(cur, path) {
			next, err := os.Open(path)
			if err == nil {
				// What the writer put in the old file before it reopened.
				if err := readEntries(rd, emit, nil, false); err != nil && !errors.Is(err, io.EOF) {
					next.Close()
					return finish(err)
				}
				cur.Close()
				cur, rd = next, bufio.NewReaderSize(next, logBuffer)
				continue
			}
		}
		if !running() {
			// One more read: what the container wrote before it exited.
			if err := readEntries(rd, emit, nil, false); err != nil && !errors.Is(err, io.EOF) {
				return finish(err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followPoll):
		}
	}
}

func finish(err error) error {
	if errors.Is(err, errLimitReached) {
		return nil
	}
	return err
}

// readEntries reads complete lines from r to its end. A line not yet
// ended is left for the next read (r keeps it buffered only if it can be
// unread: the writer writes whole lines, so this is the rare cut write).
func readEntries(r *bufio.Reader, emit func(entry) error, every func(), bounded bool) error {
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: read the rest.
			rest, rerr := r.ReadBytes('\n')
			line, err = append(append([]byte(nil), line...), rest...), rerr
		}
		if err != nil {
			return err
		}
		e, perr := parseEntry(line[:len(line)-1])
		if perr != nil {
			continue // upstream skips lines it cannot parse
		}
		if err := emit(e); err != nil {
			return err
		}
		if n++; bounded && every != nil && n%4096 == 0 {
			every() // keep the tail buffer bounded
		}
	}
}

// rotated says whether path now names another file than f.
func rotated(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	if err != nil {
		return false
	}
	return !os.SameFile(a, b)
}

// bufferedFlusher batches small writes; Flush empties the batch and
// flushes what is under it (an http.ResponseWriter).
type bufferedFlusher struct {
	bw   *bufio.Writer
	next io.Writer
}

func (b bufferedFlusher) Write(p []byte) (int, error) { return b.bw.Write(p) }
func (b bufferedFlusher) Flush() {
	b.bw.Flush()
	flush(b.next)
}

func flush(w io.Writer) {
	if f, ok := w.(interface{ Flush() }); ok {
		f.Flush()
	}
}
