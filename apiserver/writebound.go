package apiserver

import (
	"net/http"
	"sync"
	"time"
)

// DefaultWriteTimeout bounds one write of a watch, and what other
// responses may take beyond their request timeout: a client that takes
// longer to take the bytes has stopped reading.
const DefaultWriteTimeout = 30 * time.Second

// writeBound cuts a response whose writes stall. While armed, once its
// time is up it moves the response's write deadline into the past, which
// resets the stream on HTTP/2 and fails the connection's writes on
// HTTP/1.1 (see batchconn's write deadline): a handler blocked writing to
// a client that stopped reading then returns, and only that client's
// stream (or HTTP/1.1 connection) ends. A stopped timer costs nothing, so
// a watch arms it around each write rather than keep a goroutine.
type writeBound struct {
	rc    *http.ResponseController
	timer *time.Timer
	// mu guards armed and stopped, and keeps cut from touching the
	// response after stop (when the handler may have returned).
	mu      sync.Mutex
	armed   bool
	stopped bool
}

func newWriteBound(w http.ResponseWriter) *writeBound {
	b := &writeBound{rc: http.NewResponseController(w)}
	b.timer = time.AfterFunc(time.Hour, b.cut)
	b.timer.Stop()
	return b
}

// arm cuts the response if it is not disarmed within d.
func (b *writeBound) arm(d time.Duration) {
	b.mu.Lock()
	b.armed = true
	b.timer.Reset(d)
	b.mu.Unlock()
}

func (b *writeBound) disarm() {
	b.mu.Lock()
	b.armed = false
	b.timer.Stop()
	b.mu.Unlock()
}

// stop disarms for good; it must be called before the handler returns.
func (b *writeBound) stop() {
	b.mu.Lock()
	b.armed, b.stopped = false, true
	b.timer.Stop()
	b.mu.Unlock()
}

// pastDeadline is any time before now: a write deadline there fails
// writes at once.
var pastDeadline = time.Unix(1, 0)

func (b *writeBound) cut() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.armed && !b.stopped {
		b.rc.SetWriteDeadline(pastDeadline)
	}
}

// boundedWriter is a response's writer whose every write and flush must
// complete within timeout.
type boundedWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher
	bound   *writeBound
	timeout time.Duration
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	w.bound.arm(w.timeout)
	defer w.bound.disarm()
	return w.w.Write(p)
}

func (w *boundedWriter) Flush() {
	w.bound.arm(w.timeout)
	defer w.bound.disarm()
	w.flusher.Flush()
}
