package pargzip

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// input is n bytes that compress like API objects: repeated structure with
// varying values.
func input(n int) []byte {
	var b bytes.Buffer
	r := rand.New(rand.NewPCG(1, 2))
	for b.Len() < n {
		fmt.Fprintf(&b, `{"metadata":{"name":"pod-%d","uid":"%x"},"spec":{"nodeName":"node-%d"}},`, r.IntN(1e6), r.Uint64(), r.IntN(100))
	}
	return b.Bytes()[:n]
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("gzip header: %v", err)
	}
	// Bytes after the member would read as a bad second header.
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("gzip body: %v", err)
	}
	return out
}

func TestOutputIsOneGzipMemberOfTheInput(t *testing.T) {
	var pool Pool
	sizes := []int{0, 1, 1000, ChunkSize - 1, ChunkSize, ChunkSize + 1, 3*ChunkSize + 17, 10 * ChunkSize}
	for _, workers := range []int{1, 2, 4} {
		for _, n := range sizes {
			for _, write := range []int{1 << 30, 2000, 7} {
				if write == 7 && n > ChunkSize+1 {
					continue // byte-sized writes of megabytes only take time
				}
				t.Run(fmt.Sprintf("workers=%d/size=%d/writes=%d", workers, n, write), func(t *testing.T) {
					in := input(n)
					var out bytes.Buffer
					z := NewWriter(&out, &pool, workers)
					for p := in; len(p) > 0; {
						k := min(write, len(p))
						if m, err := z.Write(p[:k]); err != nil || m != k {
							t.Fatalf("Write = %d, %v", m, err)
						}
						p = p[k:]
					}
					if err := z.Close(); err != nil {
						t.Fatal(err)
					}
					if got := gunzip(t, out.Bytes()); !bytes.Equal(got, in) {
						t.Fatalf("gunzipped %d bytes, differ from the %d written", len(got), len(in))
					}
				})
			}
		}
	}
}

func TestOutputIsSmallerThanInput(t *testing.T) {
	var pool Pool
	in := input(20 * ChunkSize)
	var out, ref bytes.Buffer
	z := NewWriter(&out, &pool, 2)
	z.Write(in)
	z.Close()
	g, _ := gzip.NewWriterLevel(&ref, gzip.BestSpeed)
	g.Write(in)
	g.Close()
	// Chunks start with an empty window: a little larger than one stream.
	if float64(out.Len()) > 1.1*float64(ref.Len()) {
		t.Errorf("%d bytes, one gzip stream at the same level takes %d", out.Len(), ref.Len())
	}
}

type failingWriter struct{ left int }

var errBroken = errors.New("connection broken")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		return 0, errBroken
	}
	f.left -= len(p)
	return len(p), nil
}

// A failing connection ends the body with its error and leaves no
// goroutine behind (TestMain checks).
func TestUnderlyingErrorIsReturnedAndGoroutinesEnd(t *testing.T) {
	var pool Pool
	z := NewWriter(&failingWriter{left: 100}, &pool, 4)
	in := input(8 * ChunkSize)
	var err error
	for p := in; len(p) > 0 && err == nil; p = p[min(len(p), 10000):] {
		_, err = z.Write(p[:min(len(p), 10000)])
	}
	if cerr := z.Close(); !errors.Is(cerr, errBroken) {
		t.Fatalf("Close = %v, want %v", cerr, errBroken)
	}
	if !errors.Is(err, errBroken) {
		t.Errorf("Write after the failure = %v, want %v", err, errBroken)
	}
	if _, err := z.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
}
