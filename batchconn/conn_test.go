package batchconn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tcpPair returns the two ends of a TCP connection on 127.0.0.1: the
// server's end as accepted through NewListener, and the client's.
func tcpPair(t *testing.T, opts Options) (*Conn, net.Conn) {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := NewListener(raw, opts)
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return server.(*Conn), client
}

// gatedConn is a real connection whose writes wait for gate to close and
// are counted, so that a test can hold the writer goroutine in a "system
// call" and see how many calls the held bytes then take.
type gatedConn struct {
	net.Conn
	gate   chan struct{}
	once   sync.Once
	writes atomic.Int32
}

// open lets the held write and all later ones through.
func (g *gatedConn) open() { g.once.Do(func() { close(g.gate) }) }

func (g *gatedConn) Write(p []byte) (int, error) {
	<-g.gate
	g.writes.Add(1)
	return g.Conn.Write(p)
}

// gatedPair is tcpPair with the server's end held at a gate.
func gatedPair(t *testing.T, opts Options) (*Conn, *gatedConn, net.Conn) {
	t.Helper()
	server, client := tcpPair(t, opts)
	g := &gatedConn{Conn: server.Conn, gate: make(chan struct{})}
	server.Conn = g   // before the first Write starts the writer
	t.Cleanup(g.open) // before the connections close, should the test fail
	return server, g, client
}

// waitTaken waits until the writer goroutine has taken everything held.
func waitTaken(t *testing.T, c *Conn) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		c.mu.Lock()
		held := c.held
		c.mu.Unlock()
		if held == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not take the held bytes")
		}
		time.Sleep(time.Millisecond)
	}
}

func readAll(t *testing.T, c net.Conn, n int) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	return buf
}

func TestWritesArriveInOrderAndWhole(t *testing.T) {
	server, client := tcpPair(t, Options{MaxPending: 64 << 10})
	// Sizes below, at and above a chunk, and past MaxPending.
	sizes := []int{1, 100, 4096 + 29, chunkSize - 1, chunkSize, chunkSize + 1, 3*chunkSize + 7, 200 << 10, 5}
	var want bytes.Buffer
	for i, n := range sizes {
		p := bytes.Repeat([]byte{byte('a' + i)}, n)
		want.Write(p)
	}
	go func() {
		for i, n := range sizes {
			if _, err := server.Write(bytes.Repeat([]byte{byte('a' + i)}, n)); err != nil {
				t.Errorf("write %d bytes: %v", n, err)
				return
			}
		}
	}()
	if got := readAll(t, client, want.Len()); !bytes.Equal(got, want.Bytes()) {
		t.Fatal("the bytes read differ from the bytes written")
	}
}

func TestConcurrentWritesStayWhole(t *testing.T) {
	server, client := tcpPair(t, Options{})
	const writers, records, size = 4, 500, 1000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rec := bytes.Repeat([]byte{byte('0' + w)}, size)
			for range records {
				if _, err := server.Write(rec); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	got := readAll(t, client, writers*records*size)
	wg.Wait()
	counts := make(map[byte]int)
	for off := 0; off < len(got); off += size {
		rec := got[off : off+size]
		if !bytes.Equal(rec, bytes.Repeat(rec[:1], size)) {
			t.Fatalf("record at %d mixes two writes", off)
		}
		counts[rec[0]]++
	}
	for w := range writers {
		if counts[byte('0'+w)] != records {
			t.Fatalf("writer %d: %d records arrived, want %d", w, counts[byte('0'+w)], records)
		}
	}
}

func TestWritesDuringASystemCallShareTheNext(t *testing.T) {
	server, g, client := gatedPair(t, Options{})
	// The first write takes the writer into its (held) system call; the
	// next 1,000 return at once and are held.
	if _, err := server.Write([]byte("first")); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	want.WriteString("first")
	for i := range 1000 {
		rec := fmt.Appendf(nil, "record %04d of a burst of small writes\n", i)
		want.Write(rec)
		if _, err := server.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	g.open()
	if got := readAll(t, client, want.Len()); !bytes.Equal(got, want.Bytes()) {
		t.Fatal("the bytes read differ from the bytes written")
	}
	// One call for "first", then one per held chunk: the fallback of
	// net.Buffers for a connection without writev.
	held := want.Len() - len("first")
	if max := 1 + (held+chunkSize-1)/chunkSize; int(g.writes.Load()) > max {
		t.Fatalf("%d writes reached the connection, want at most %d", g.writes.Load(), max)
	}
}

func TestWriteWaitsForRoomPastMaxPending(t *testing.T) {
	const maxPending = 64 << 10
	server, g, client := gatedPair(t, Options{MaxPending: maxPending})
	if _, err := server.Write([]byte("x")); err != nil { // the writer takes it and blocks
		t.Fatal(err)
	}
	waitTaken(t, server) // what follows is held
	block := make([]byte, maxPending)
	if _, err := server.Write(block); err != nil {
		t.Fatal(err)
	}
	returned := make(chan error, 1)
	go func() {
		_, err := server.Write([]byte("one byte too many"))
		returned <- err
	}()
	select {
	case err := <-returned:
		t.Fatalf("a write past MaxPending returned (%v) while the writer was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	g.open()
	if err := <-returned; err != nil {
		t.Fatal(err)
	}
	readAll(t, client, 1+maxPending+len("one byte too many"))
}

func TestCloseWritesWhatIsHeld(t *testing.T) {
	server, client := tcpPair(t, Options{})
	want := bytes.Repeat([]byte("held until close "), 60_000) // ~1 MiB
	if _, err := server.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := server.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(client)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes after close, want the %d written", len(got), len(want))
	}
	if _, err := server.Write([]byte("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v, want ErrClosed", err)
	}
}

func TestCloseGivesUpOnAPeerThatDoesNotRead(t *testing.T) {
	server, _ := tcpPair(t, Options{MaxPending: 64 << 20, CloseTimeout: 200 * time.Millisecond})
	// More than loopback's socket buffers take, to a peer that never
	// reads: the writer stays in its system call.
	if _, err := server.Write(make([]byte, 48<<20)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := server.Close()
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("close took %v with CloseTimeout 200ms", took)
	}
	if err == nil {
		t.Fatal("close reported no error though held bytes were never written")
	}
}

func TestAWriteErrorIsReportedAndSticks(t *testing.T) {
	server, client := tcpPair(t, Options{})
	client.(*net.TCPConn).SetLinger(0) // the close resets the connection
	client.Close()
	var first error
	for i := 0; i < 1000 && first == nil; i++ {
		_, first = server.Write(make([]byte, 16<<10))
		time.Sleep(time.Millisecond)
	}
	if first == nil {
		t.Fatal("writes to a reset connection never failed")
	}
	if _, err := server.Write([]byte("again")); !errors.Is(err, first) {
		t.Fatalf("the next write returned %v, want the first error %v", err, first)
	}
}

func TestADeadlineAfterAWriteDoesNotDropItsBytes(t *testing.T) {
	// As crypto/tls closes: a last write, a write deadline of "now",
	// then Close. The peer reads slowly, so the bytes are still held
	// when the deadline passes.
	server, client := tcpPair(t, Options{MaxPending: 64 << 20})
	want := bytes.Repeat([]byte("the last bytes before close "), 300_000) // ~8 MiB
	if _, err := server.Write(want); err != nil {
		t.Fatal(err)
	}
	server.SetWriteDeadline(time.Now())
	if _, err := server.Write([]byte("late")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write after the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- server.Close() }()
	time.Sleep(50 * time.Millisecond)
	got := readAll(t, client, len(want))
	if !bytes.Equal(got, want) {
		t.Fatal("the bytes read differ from the bytes written")
	}
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
}

func TestAWriteWaitingForRoomFailsAtTheDeadline(t *testing.T) {
	server, g, _ := gatedPair(t, Options{MaxPending: 1 << 10})
	if _, err := server.Write(make([]byte, 1<<10)); err != nil {
		t.Fatal(err)
	}
	waitTaken(t, server)
	if _, err := server.Write(make([]byte, 1<<10)); err != nil { // held: the writer is at the gate
		t.Fatal(err)
	}
	server.SetWriteDeadline(time.Now().Add(time.Hour))
	returned := make(chan error, 1)
	go func() {
		_, err := server.Write(make([]byte, 1<<10))
		returned <- err
	}()
	time.Sleep(20 * time.Millisecond)
	// Moving the deadline closer wakes the waiting Write in time.
	server.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	select {
	case err := <-returned:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the waiting write returned %v, want os.ErrDeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting write did not fail at its deadline")
	}
	server.SetWriteDeadline(time.Time{})
	g.open()
	if _, err := server.Write([]byte("after")); err != nil {
		t.Fatalf("a write after the deadline was lifted: %v", err)
	}
}

// TestCloseAfterAStalledWriteDoesNotWait: once a Write has waited for room
// until its deadline, the peer is known not to read, and Close (which a
// server calls right after such a failure) closes at once instead of
// waiting CloseTimeout for held bytes that will not leave.
func TestCloseAfterAStalledWriteDoesNotWait(t *testing.T) {
	server, _ := tcpPair(t, Options{MaxPending: 1 << 10, CloseTimeout: time.Hour})
	// More than loopback's socket buffers take, to a peer that never
	// reads: the writer stays in its system call.
	if _, err := server.Write(make([]byte, 48<<20)); err != nil {
		t.Fatal(err)
	}
	waitTaken(t, server)
	if _, err := server.Write(make([]byte, 1<<10)); err != nil { // held behind the stuck system call
		t.Fatal(err)
	}
	server.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := server.Write(make([]byte, 1<<10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a write past MaxPending at its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- server.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("close waited for a peer that stalled a write until its deadline")
	}
}
