package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireEnv says KITE_REQUIRE_CRI, which CI sets: the tests must run.
const requireEnv = "KITE_REQUIRE_CRI"

// needNetns skips t (or fails it under KITE_REQUIRE_CRI) where namespaces
// and nftables are out of reach.
func needNetns(t testing.TB) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil && why == "" {
			why = "no " + tool + " installed (apt-get install iproute2 nftables)"
		}
	}
	if why == "" {
		return
	}
	if os.Getenv(requireEnv) != "" {
		t.Fatalf("%s: the service proxy tests cannot run, and %s is set", why, requireEnv)
	}
	t.Skipf("%s: the service proxy tests need root, ip and nft", why)
}

var nsSeq atomic.Int64

// run runs a command, failing t with its output.
func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// newNetns makes a network namespace with loopback up, deleted when the
// test ends. Names are unique per process and call: other checkouts'
// tests may run at the same time.
func newNetns(t testing.TB, role string) string {
	t.Helper()
	name := fmt.Sprintf("kp%d-%d-%s", os.Getpid()%100000, nsSeq.Add(1), role)
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { run(t, "ip", "netns", "delete", name) })
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

// link joins namespaces a and b by a veth pair made inside them (it never
// exists in the machine's namespace), addressed aIP/24 and bIP/24.
func link(t testing.TB, a, aIf, aIP, b, bIf, bIP string) {
	t.Helper()
	run(t, "ip", "-n", a, "link", "add", aIf, "type", "veth", "peer", "name", bIf, "netns", b)
	run(t, "ip", "-n", a, "addr", "add", aIP+"/24", "dev", aIf)
	run(t, "ip", "-n", b, "addr", "add", bIP+"/24", "dev", bIf)
	run(t, "ip", "-n", a, "link", "set", aIf, "up")
	run(t, "ip", "-n", b, "link", "set", bIf, "up")
}

// inNetns runs f on an OS thread that has joined namespace ns. The thread
// stays locked and ends with the goroutine, so no other goroutine ever
// runs in ns. Sockets made in f belong to ns for their whole life.
func inNetns(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with us
		fd, err := unix.Open("/var/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open namespace %s: %w", ns, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("join namespace %s: %w", ns, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// serve listens on addr in namespace ns and answers each connection with
// name, until the test ends.
func serve(t testing.TB, ns, addr, name string) {
	t.Helper()
	var ln net.Listener
	if err := inNetns(ns, func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(name))
			c.Close()
		}
	}()
}

// ask connects from namespace ns to addr and returns what the server
// says.
func ask(ns, addr string) (string, error) {
	var c net.Conn
	if err := inNetns(ns, func() (err error) {
		c, err = net.DialTimeout("tcp", addr, 2*time.Second)
		return err
	}); err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	b, err := io.ReadAll(c)
	return string(b), err
}

// tables lists the nftables tables of namespace ns.
func tables(t testing.TB, ns string) string {
	t.Helper()
	return run(t, "ip", "netns", "exec", ns, "nft", "list", "tables")
}

// eventually retries f every 10 ms until it returns nil or d passes.
func eventually(t testing.TB, d time.Duration, f func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("after %v: %v", d, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
