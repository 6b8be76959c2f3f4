package supervisor

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// CRITimeFormat is the CRI log timestamp: RFC 3339 with nine fixed
// fractional digits, as the kubelet's reader expects (cri-client logs).
const CRITimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// RotatedTimeFormat names a rotated log, as the kubelet's container log
// manager does: <log>.<YYYYMMDD-HHMMSS>.
const RotatedTimeFormat = "20060102-150405"

// MaxLogLine is the longest piece of a line written as one log entry;
// longer lines become P (partial) entries of this size followed by the
// rest as F, as containerd does with its default max_container_log_line_size.
const MaxLogLine = 16 * 1024

// logWriter writes a container's stdout and stderr to its log file in
// the CRI format, one entry per line, and rotates the file by size. Both
// streams share one writer; each entry is one write(2) on an O_APPEND
// file, so entries never interleave.
type logWriter struct {
	path     string
	maxSize  int64 // rotate once the file is at least this big; 0: never
	maxFiles int   // files kept, the current one included (≥ 2)
	now      func() time.Time

	streams     sync.WaitGroup // the copy goroutines (supervisor only)
	compression sync.WaitGroup // the compress goroutine

	mu            sync.Mutex
	f             *os.File
	size          int64
	buf           []byte
	compressing   bool // a compress goroutine runs
	compressAgain bool // a rotation came meanwhile: look again when done
}

func openLogWriter(path string, maxSize int64, maxFiles int) (*logWriter, error) {
	if err := os.MkdirAll(dirOf(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat log %s: %w", path, err)
	}
	if maxFiles < 2 {
		maxFiles = 2
	}
	return &logWriter{path: path, maxSize: maxSize, maxFiles: maxFiles, now: time.Now, f: f, size: st.Size()}, nil
}

// writeEntry appends one CRI log entry: "<ts> <stream> <F|P> <content>\n".
func (w *logWriter) writeEntry(stream string, partial bool, content []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if w.maxSize > 0 && w.size >= w.maxSize {
		if err := w.rotate(now); err != nil {
			fmt.Fprintf(os.Stderr, "rotate %s: %v\n", w.path, err)
		}
	}
	tag := "F"
	if partial {
		tag = "P"
	}
	b := now.AppendFormat(w.buf[:0], CRITimeFormat)
	b = append(b, ' ')
	b = append(b, stream...)
	b = append(b, ' ')
	b = append(b, tag...)
	b = append(b, ' ')
	b = append(b, content...)
	b = append(b, '\n')
	w.buf = b
	n, err := w.f.Write(b)
	w.size += int64(n)
	return err
}

// rotate does what the kubelet's container log manager does for a log of
// at least containerLogMaxSize: drop temporary leftovers, delete the
// oldest rotated files so that at most maxFiles−2 remain, gzip the rotated
// files not yet compressed (in the background), rename the current file to
// <log>.<timestamp> and reopen <log>. A reader following the log keeps its
// open file (renamed, complete) and finds the new one by path, as it does
// with upstream's rotation. Two rotations within one second
// would share a name: the second waits for the next second.
func (w *logWriter) rotate(now time.Time) error {
	rotatedName := w.path + "." + now.Format(RotatedTimeFormat)
	if _, err := os.Stat(rotatedName); err == nil {
		return nil
	}
	rotated, err := withPrefix(w.path, ".")
	if err != nil {
		return err
	}
	var keep []string
	for _, name := range rotated {
		if strings.HasSuffix(name, ".tmp") {
			if !w.compressing { // else it may be the one being written
				os.Remove(name)
			}
			continue
		}
		keep = append(keep, name)
	}
	sort.Strings(keep) // timestamps sort in time order; ".gz" does not change that
	for len(keep) > w.maxFiles-2 {
		if err := os.Remove(keep[0]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		keep = keep[1:]
	}
	var compress []string
	for _, name := range keep {
		if !strings.HasSuffix(name, ".gz") {
			compress = append(compress, name)
		}
	}
	switch {
	case len(compress) == 0:
	case w.compressing:
		// The compressor looks again for what is left when it is done.
		w.compressAgain = true
	default:
		// Compressed beside the writes, as the kubelet's log manager
		// does, so a container never blocks on its log being gzipped.
		w.compressing = true
		w.compression.Add(1)
		go w.compress(compress)
	}
	if err := os.Rename(w.path, rotatedName); err != nil {
		return err
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		if rerr := os.Rename(rotatedName, w.path); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	w.f.Close()
	w.f, w.size = f, 0
	return nil
}

// compress gzips names, then what rotations that came meanwhile left.
func (w *logWriter) compress(names []string) {
	defer w.compression.Done()
	for {
		for _, name := range names {
			w.compressOne(name)
		}
		w.mu.Lock()
		again := w.compressAgain
		w.compressAgain, w.compressing = false, again
		w.mu.Unlock()
		if !again {
			return
		}
		names = w.uncompressedButNewest()
	}
}

func (w *logWriter) compressOne(name string) {
	tmp, err := gzipFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return // deleted by a rotation meanwhile
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "compress %s: %v\n", name, err)
		return
	}
	// Under the writer's lock, which rotations hold while they delete old
	// files: a file deleted while it was being compressed must not come
	// back as its .gz.
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := os.Stat(name); err != nil {
		os.Remove(tmp)
	} else if err := os.Rename(tmp, name+".gz"); err != nil {
		os.Remove(tmp)
		fmt.Fprintf(os.Stderr, "compress %s: %v\n", name, err)
	} else {
		os.Remove(name)
	}
}

// uncompressedButNewest lists the rotated files not yet compressed,
// except the newest rotated file, which stays as it is until the next
// rotation (as upstream leaves it).
func (w *logWriter) uncompressedButNewest() []string {
	rotated, _ := withPrefix(w.path, ".")
	sort.Strings(rotated)
	var names []string
	for i, name := range rotated {
		if i < len(rotated)-1 && !strings.HasSuffix(name, ".gz") && !strings.HasSuffix(name, ".tmp") {
			names = append(names, name)
		}
	}
	return names
}

// close waits for a compression under way and closes the log.
func (w *logWriter) close() error {
	w.compression.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}

// gzipFile compresses name to name.tmp; the caller renames that to
// name.gz and removes name (see compress). A failed attempt removes its
// .tmp, and a rotation removes any left by a supervisor that died.
func gzipFile(name string) (tmp string, err error) {
	in, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp = name + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return "", err
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// copyStream reads one of the container's streams until EOF and writes
// each line as a log entry: a line ending in "\n" (or "\r\n") is written
// without it as F; a line longer than maxLine is cut into P entries of
// maxLine bytes, its last piece F; what is left at EOF without a newline
// is written as P, as containerd's CRI logger does, so that readers (logs,
// the termination message's log tail) do not add a newline the container
// never wrote (`echo -n DONE` reads back as "DONE").
func copyStream(r io.Reader, stream string, w *logWriter, maxLine int) error {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			line = bytes.TrimSuffix(line[:len(line)-1], []byte{'\r'})
			if werr := w.writeEntry(stream, false, line); werr != nil {
				return werr
			}
		case errors.Is(err, bufio.ErrBufferFull):
			if werr := w.writeEntry(stream, true, line); werr != nil {
				return werr
			}
		case errors.Is(err, io.EOF):
			if len(line) > 0 {
				return w.writeEntry(stream, true, line)
			}
			return nil
		default:
			return err
		}
	}
}
