package batchconn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
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
	writes atomic.Int32
}

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
	server.Conn = g // before the first Write starts the writer
	return server, g, client
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
	close(g.gate)
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
	// Wait until the writer has taken "x", so that what follows is held.
	for deadline := time.Now().Add(5 * time.Second); ; {
		server.mu.Lock()
		held := server.held
		server.mu.Unlock()
		if held == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not take the first write")
		}
		time.Sleep(time.Millisecond)
	}
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
	close(g.gate)
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
