package chaos

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// TestProxyForwardsUntilCut checks that the proxy carries bytes both ways,
// that cut ends every carried connection, and that a new connection works
// after a cut.
func TestProxyForwardsUntilCut(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	p, err := newProxy(echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	roundTrip := func(c net.Conn) error {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil && line != "ping\n" {
			t.Errorf("echoed %q, want ping", line)
		}
		return err
	}
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	if n := p.cut(); n != 1 {
		t.Errorf("cut %d connections, want 1", n)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("a cut connection still reads")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("a cut connection was not closed")
	}
	c2, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := roundTrip(c2); err != nil {
		t.Fatalf("after a cut: %v", err)
	}
}
