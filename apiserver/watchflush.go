package apiserver

import (
	"bytes"
	"io"
	"sync"
)

// Live watch events leave a watch in batches: all that a watch writes
// between two flushes goes to the response in one write. On HTTP/2 that
// is one hand-off to the connection's writer, in frames as large as the
// client takes, instead of one per 4 KiB (the server's per-stream buffer);
// a watcher that lags behind a burst then catches up in a few large
// writes rather than many small ones, each of which costs a system call
// and a TLS record.

// batchWriter gathers a watch's live events until the watch flushes. Its
// buffer comes from a pool when the first event of a batch arrives and
// goes back after the flush, so an idle watch holds none (a server may
// carry thousands of watches).
type batchWriter struct {
	w    io.Writer
	pool *sync.Pool // of *bytes.Buffer
	buf  *bytes.Buffer
}

// maxBatch is what a batch may gather before it is written regardless.
const maxBatch = 256 << 10

// maxPooledBatch bounds the buffers kept for reuse: a buffer that grew
// for a huge event is dropped.
const maxPooledBatch = 1 << 20

func (b *batchWriter) Write(p []byte) (int, error) {
	b.batch().Write(p)
	return len(p), b.appended()
}

// batch returns the buffer of the batch, for an event to be appended to
// it in place; appended must follow.
func (b *batchWriter) batch() *bytes.Buffer {
	if b.buf == nil {
		b.buf, _ = b.pool.Get().(*bytes.Buffer)
		if b.buf == nil {
			b.buf = new(bytes.Buffer)
		}
	}
	return b.buf
}

// appended writes the batch out once it has gathered maxBatch.
func (b *batchWriter) appended() error {
	if b.buf.Len() >= maxBatch {
		return b.writeOut()
	}
	return nil
}

// writeOut writes the batch gathered so far and returns the buffer.
func (b *batchWriter) writeOut() error {
	if b.buf == nil {
		return nil
	}
	_, err := b.w.Write(b.buf.Bytes())
	b.buf.Reset()
	if b.buf.Cap() <= maxPooledBatch {
		b.pool.Put(b.buf)
	}
	b.buf = nil
	return err
}
