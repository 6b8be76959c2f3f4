// Package batchconn gives each connection a server accepts a writer
// goroutine of its own, so that what the server writes while the kernel is
// still taking an earlier write leaves in one system call.
//
// Why: an HTTP/2 server writes through a 4 KiB buffer, so a connection that
// carries many watches hands the kernel one TLS record of at most 4 KiB per
// write, and a burst of watch events costs a write(2) per record; with 500
// watchers that was a sixth of the API server's CPU. Below TLS the records
// are already sealed, so gathering them changes no byte a client receives,
// only how many system calls carry them.
//
// A lone write is not delayed: the writer goroutine writes as soon as it has
// bytes; what arrives while it is in a system call waits for the next one.
package batchconn

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// Options tunes the connections of a Listener.
type Options struct {
	// MaxPending bounds the bytes a connection holds for the writer's
	// next system call (the one in progress carries at most as many
	// again); a Write past it blocks until the writer has caught up, so
	// a client that stops reading still holds the server back as TCP
	// would. 0 means DefaultMaxPending.
	MaxPending int
	// CloseTimeout bounds how long Close waits for held bytes to be
	// written before it closes the connection under them. 0 means
	// DefaultCloseTimeout.
	CloseTimeout time.Duration
}

// DefaultMaxPending is Options.MaxPending's default: a few TCP send
// buffers' worth.
const DefaultMaxPending = 1 << 20

// DefaultCloseTimeout is Options.CloseTimeout's default, the time crypto/tls
// gives its closing alert.
const DefaultCloseTimeout = 5 * time.Second

// ErrClosed is returned by writes to a closed Conn.
var ErrClosed = errors.New("batchconn: write to closed connection")

// NewListener returns a listener whose connections are Conns around ln's.
func NewListener(ln net.Listener, opts Options) net.Listener {
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.CloseTimeout <= 0 {
		opts.CloseTimeout = DefaultCloseTimeout
	}
	return &listener{Listener: ln, opts: opts, bufs: newBufPool()}
}

type listener struct {
	net.Listener
	opts Options
	bufs *bufPool // shared by the listener's connections
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newConn(c, l.opts, l.bufs), nil
}

// Conn is a net.Conn whose writes are handed to a writer goroutine. Write
// returns once the bytes are held (or, past MaxPending, once there is room
// for them); an error of the system call that carried them is returned by
// a later Write or by Close, and from then on by every Write, as crypto/tls
// treats a failed write. Reads and read deadlines go to the wrapped
// connection. A write deadline bounds how long Write waits for room and
// fails Writes after it; it does not reach bytes already held, which a
// Write has reported written (crypto/tls sets one to "now" right after
// its closing alert, which must still go out). Close writes what is held,
// within CloseTimeout, then closes the connection and stops the writer.
type Conn struct {
	net.Conn
	opts Options
	bufs *bufPool

	// mu guards the fields below; it is never held across I/O. cond
	// wakes the writer when there is something to write and writers
	// that wait for room when the writer has written or failed.
	mu      sync.Mutex
	cond    sync.Cond
	pending []*chunk // held bytes, in order; from bufs, nil when none
	held    int      // bytes in pending
	err     error    // sticky: the first write error, or ErrClosed
	closing bool
	// deadline is the write deadline; zero means none.
	deadline time.Time
	// waiting counts Writes waiting for room: only they need waking when
	// the deadline moves (an HTTP/2 server with a WriteByteTimeout moves
	// it around every write).
	waiting int
	// stalled: a Write waited for room until its deadline. The peer is
	// not reading, and Close does not wait for it.
	stalled bool
	started bool          // the writer goroutine has been started
	done    chan struct{} // closed when the writer goroutine returns

	closeOnce sync.Once
	closeErr  error
}

// newConn wraps c. The writer goroutine starts with the first Write and
// ends with Close.
func newConn(c net.Conn, opts Options, bufs *bufPool) *Conn {
	bc := &Conn{Conn: c, opts: opts, bufs: bufs, done: make(chan struct{})}
	bc.cond.L = &bc.mu
	return bc
}

// Write holds a copy of p for the writer goroutine.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started && !c.closing {
		c.started = true
		go c.run()
	}
	var timer *time.Timer // wakes this Write at timerAt, the deadline
	var timerAt time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for c.err == nil && !c.closing && c.held > 0 && c.held+len(p) > c.opts.MaxPending {
		if c.pastDeadline() {
			break
		}
		if !c.deadline.IsZero() && !c.deadline.Equal(timerAt) {
			if timer != nil {
				timer.Stop()
			}
			timerAt = c.deadline
			timer = time.AfterFunc(time.Until(timerAt), c.broadcast)
		}
		c.waiting++
		c.cond.Wait()
		c.waiting--
	}
	if c.err != nil {
		return 0, c.err
	}
	if c.closing {
		return 0, ErrClosed
	}
	if c.pastDeadline() {
		if c.held > 0 && c.held+len(p) > c.opts.MaxPending {
			c.stalled = true
		}
		return 0, os.ErrDeadlineExceeded
	}
	c.held += len(p)
	for rest := p; len(rest) > 0; {
		if len(c.pending) == 0 || c.pending[len(c.pending)-1].full() {
			c.pending = append(c.pending, c.bufs.get())
		}
		rest = c.pending[len(c.pending)-1].fill(rest)
	}
	c.cond.Broadcast()
	return len(p), nil
}

// SetWriteDeadline sets the write deadline (see Conn). It wakes a Write
// waiting for room, which then looks at the new deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	if c.waiting > 0 {
		c.cond.Broadcast()
	}
	return nil
}

// SetDeadline sets the wrapped connection's read deadline and the write
// deadline.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// pastDeadline reports whether the write deadline has passed. c.mu is
// held.
func (c *Conn) pastDeadline() bool {
	return !c.deadline.IsZero() && !time.Now().Before(c.deadline)
}

func (c *Conn) broadcast() {
	c.mu.Lock()
	c.cond.Broadcast()
	c.mu.Unlock()
}

// run is the writer goroutine: it writes everything held, in as few
// system calls as the arrival of writes allows, until Close or an error.
func (c *Conn) run() {
	defer close(c.done)
	var spare []*chunk // the chunk list not in use, kept between rounds
	var out net.Buffers
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for len(c.pending) == 0 && !c.closing && c.err == nil {
			c.cond.Wait()
		}
		if c.err != nil || len(c.pending) == 0 {
			return // failed, or closing with nothing left
		}
		chunks := c.pending
		c.pending, c.held = spare[:0], 0
		c.mu.Unlock()
		out = out[:0]
		for _, ch := range chunks {
			out = append(out, ch.bytes())
		}
		w := out                    // WriteTo consumes its receiver
		_, err := w.WriteTo(c.Conn) // one writev(2)
		for _, ch := range chunks {
			c.bufs.put(ch)
		}
		// Forget the chunks: they are the pool's now, and an idle
		// connection must not keep them from the garbage collector.
		clear(out)
		clear(chunks)
		spare = chunks
		c.mu.Lock()
		if err != nil && c.err == nil {
			c.err = err
			c.dropPending()
		}
		c.cond.Broadcast()
	}
}

// Close writes the held bytes (waiting at most CloseTimeout, not at all
// once a Write has waited for room until its deadline), closes the
// wrapped connection and waits for the writer goroutine to end. It
// returns the error of a held write that failed, if any, else the close's.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closing = true
		started := c.started
		stalled := c.stalled
		c.cond.Broadcast()
		c.mu.Unlock()
		if started && !stalled {
			t := time.NewTimer(c.opts.CloseTimeout)
			select {
			case <-c.done:
			case <-t.C: // the peer does not read: the close below ends the write
			}
			t.Stop()
		}
		closeErr := c.Conn.Close()
		if started {
			<-c.done
		}
		c.mu.Lock()
		if c.err == nil {
			c.err = ErrClosed
		} else if !errors.Is(c.err, ErrClosed) {
			closeErr = errors.Join(c.err, closeErr)
		}
		c.dropPending()
		c.cond.Broadcast()
		c.mu.Unlock()
		c.closeErr = closeErr
	})
	return c.closeErr
}

// dropPending returns the held chunks to the pool. c.mu must be held.
func (c *Conn) dropPending() {
	for _, ch := range c.pending {
		c.bufs.put(ch)
	}
	c.pending, c.held = nil, 0
}

// chunkSize is the unit in which held bytes are kept: a few TLS records.
// The writer hands the kernel all held chunks in one writev(2).
const chunkSize = 32 << 10

type chunk struct {
	n int
	b [chunkSize]byte
}

func (ch *chunk) full() bool    { return ch.n == chunkSize }
func (ch *chunk) bytes() []byte { return ch.b[:ch.n] }

// fill copies as much of p as fits and returns the rest.
func (ch *chunk) fill(p []byte) []byte {
	k := copy(ch.b[ch.n:], p)
	ch.n += k
	return p[k:]
}

// bufPool holds chunks, so that an idle connection holds none.
type bufPool struct{ pool sync.Pool }

func newBufPool() *bufPool {
	return &bufPool{pool: sync.Pool{New: func() any { return new(chunk) }}}
}

func (p *bufPool) get() *chunk { return p.pool.Get().(*chunk) }

func (p *bufPool) put(ch *chunk) {
	ch.n = 0
	p.pool.Put(ch)
}
