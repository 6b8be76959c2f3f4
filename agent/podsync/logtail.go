package podsync

import (
	"bytes"
	"io"
	"os"
)

// Termination message from logs, as the kubelet's FallbackToLogsOnError:
// the last 80 lines of the container's log, at most 2048 bytes of them.
const (
	fallbackLines = 80
	fallbackBytes = 2048
	// tailWindow is how much of the file's end is read to find them.
	tailWindow = 64 << 10
)

// maxTerminationMessage bounds what is read of a termination-message file
// (the kubelet's MaxContainerTerminationMessageLength).
const maxTerminationMessage = 4096

// fileTail is the last max bytes of the file at path; nil when it cannot
// be read (a container that never started has none). The file may grow
// while it is read: no more than max bytes are taken.
func fileTail(path string, max int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		f.Seek(fi.Size()-max, io.SeekStart)
	}
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return nil
	}
	return data
}

// logTail is the content of the last lines of a CRI-format log file
// ("<time> <stream> <F|P> <content>"): a P(artial) entry continues on the
// next one, an F(ull) entry ends a line. Lines that do not parse are
// skipped, as the kubelet's reader does.
func logTail(path string) string {
	data := fileTail(path, tailWindow)
	entries := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	// Walk back to the first entry of the last 80 lines: stop at the full
	// entry that ends the line before them.
	var out []byte
	start, lines := len(entries), 0
	for i := len(entries) - 1; i >= 0; i-- {
		if f := bytes.SplitN(entries[i], []byte(" "), 4); len(f) == 4 && string(f[2]) != "P" {
			if lines == fallbackLines {
				break
			}
			lines++
		}
		start = i
	}
	for _, e := range entries[start:] {
		f := bytes.SplitN(e, []byte(" "), 4)
		if len(f) != 4 || (string(f[1]) != "stdout" && string(f[1]) != "stderr") {
			continue
		}
		out = append(out, f[3]...)
		if string(f[2]) != "P" {
			out = append(out, '\n')
		}
		if len(out) >= fallbackBytes {
			return string(out[:fallbackBytes])
		}
	}
	return string(out)
}
