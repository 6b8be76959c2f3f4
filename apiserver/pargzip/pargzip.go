// Package pargzip writes one gzip stream whose compression is shared by
// several goroutines: the input is cut into chunks, each chunk is deflated
// on its own goroutine, and the compressed chunks are written in order.
//
// A list of 10 000 pods is 20 MB of JSON; deflating it at level 1 with
// compress/flate takes ~31 ms of one core, most of what the API server
// spends on the list once its items' bytes are cached. The chunks are
// deflated with github.com/klauspost/compress/flate, which does level 1
// in half that time with slightly smaller output (16 ms, 787 KB against
// 816 KB for that list), and with the work spread over the cores the
// first compressed bytes leave sooner and the whole body is done in a
// fraction of the time. Each 256 KiB chunk starts with an empty window,
// which costs ~5 % of output against one stream.
//
// The output is a single standard gzip member (RFC 1952), readable by any
// gzip reader: the chunks are raw deflate blocks ended by a sync flush,
// followed by an empty final block and the CRC-32 and size of the whole
// input.
package pargzip

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/flate"
)

// ChunkSize is how much input each goroutine deflates at a time.
const ChunkSize = 256 << 10

// Pool recycles deflate state (several hundred KiB per compressor) and
// chunk buffers between Writers. The zero value is ready; a server keeps
// one for all its responses.
type Pool struct {
	compressors sync.Pool // *flate.Writer at BestSpeed
	buffers     sync.Pool // *bytes.Buffer of input or output
}

func (p *Pool) compressor(w io.Writer) *flate.Writer {
	if fw, ok := p.compressors.Get().(*flate.Writer); ok {
		fw.Reset(w)
		return fw
	}
	fw, err := flate.NewWriter(w, flate.BestSpeed)
	if err != nil {
		panic(err) // BestSpeed is a valid level
	}
	return fw
}

func (p *Pool) buffer() *bytes.Buffer {
	if b, ok := p.buffers.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return bytes.NewBuffer(make([]byte, 0, ChunkSize))
}

// Writer gzips what is written to it into an underlying writer. Write and
// Close are for one goroutine; the Writer starts and ends its compressing
// goroutines itself, and none outlives Close.
type Writer struct {
	w       io.Writer
	pool    *Pool
	workers int

	in      *bytes.Buffer // input not yet handed to a goroutine
	pending []*chunk      // handed out, to be written in this order
	crc     uint32
	size    uint32 // input size mod 2^32, as the trailer wants it
	started bool   // header written
	closed  bool
	err     error // first error of the underlying writer
}

type chunk struct {
	in, out *bytes.Buffer
	done    chan struct{}
}

// NewWriter returns a Writer to w using pool, which must not be nil.
// workers bounds how many chunks are deflated at once; 0 means GOMAXPROCS.
func NewWriter(w io.Writer, pool *Pool, workers int) *Writer {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &Writer{w: w, pool: pool, workers: workers, in: pool.buffer()}
}

// Write buffers p and hands each full chunk to a goroutine, writing the
// oldest compressed chunks out when as many as the workers are under way.
func (z *Writer) Write(p []byte) (int, error) {
	if z.closed {
		return 0, ErrClosed
	}
	if z.err != nil {
		return 0, z.err
	}
	z.size += uint32(len(p))
	n := len(p)
	for len(p) > 0 {
		room := ChunkSize - z.in.Len()
		take := min(room, len(p))
		z.in.Write(p[:take])
		p = p[take:]
		if z.in.Len() == ChunkSize {
			z.handOut()
			for len(z.pending) >= z.workers {
				z.writeOldest()
			}
			if z.err != nil {
				return 0, z.err
			}
		}
	}
	return n, nil
}

// handOut starts deflating the buffered input on a goroutine of its own.
func (z *Writer) handOut() {
	z.sum()
	c := &chunk{in: z.in, out: z.pool.buffer(), done: make(chan struct{})}
	z.in = z.pool.buffer()
	z.pending = append(z.pending, c)
	go func() {
		defer close(c.done)
		deflate(z.pool, c.out, c.in.Bytes())
	}()
}

// sum adds the buffered input to the checksum. A chunk at a time, not a
// Write at a time: list writers write items, tags and lengths of a few
// bytes, and CRC-32 is many times faster over large buffers.
func (z *Writer) sum() {
	z.crc = crc32.Update(z.crc, crc32.IEEETable, z.in.Bytes())
}

// deflate writes data as raw deflate blocks ending in a sync flush, so
// that the next chunk's blocks can follow on a byte boundary.
func deflate(pool *Pool, out *bytes.Buffer, data []byte) {
	fw := pool.compressor(out)
	fw.Write(data) // writes to a bytes.Buffer do not fail
	fw.Flush()
	pool.compressors.Put(fw)
}

// writeOldest waits for the oldest chunk under way and writes it out
// (unless the underlying writer failed before).
func (z *Writer) writeOldest() {
	c := z.pending[0]
	z.pending[0] = nil
	z.pending = z.pending[1:]
	<-c.done
	z.write(c.out.Bytes())
	z.pool.buffers.Put(c.in)
	z.pool.buffers.Put(c.out)
}

func (z *Writer) write(p []byte) {
	if z.err != nil {
		return
	}
	if !z.started {
		z.started = true
		// A gzip member header: deflate, no name or time, fastest
		// compression (XFL 4), unknown OS.
		header := [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255}
		if _, z.err = z.w.Write(header[:]); z.err != nil {
			return
		}
	}
	_, z.err = z.w.Write(p)
}

// ErrClosed is returned by a Write after Close.
var ErrClosed = errors.New("pargzip: write after close")

// Close deflates what is left, writes every chunk in order and the gzip
// trailer, and waits for all of the Writer's goroutines. It does not
// close the underlying writer.
func (z *Writer) Close() error {
	if z.closed {
		return z.err
	}
	z.closed = true
	if len(z.pending) == 0 {
		// A body of one chunk or less: no goroutine is worth starting.
		z.sum()
		out := z.pool.buffer()
		deflate(z.pool, out, z.in.Bytes())
		z.write(out.Bytes())
		z.pool.buffers.Put(out)
	} else {
		if z.in.Len() > 0 {
			z.handOut()
		}
		for len(z.pending) > 0 {
			z.writeOldest()
		}
	}
	z.pool.buffers.Put(z.in)
	z.in = nil
	// An empty final block with fixed codes (BFINAL=1, BTYPE=01, end of
	// block), as pigz ends its streams, then the CRC-32 and the size.
	end := [10]byte{0x03, 0x00}
	binary.LittleEndian.PutUint32(end[2:6], z.crc)
	binary.LittleEndian.PutUint32(end[6:], z.size)
	z.write(end[:])
	return z.err
}
