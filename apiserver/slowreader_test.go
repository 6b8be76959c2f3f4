package apiserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kite-project/kite"
)

// dialStuck opens a TLS connection to srv that asks for path (a watch)
// and then never reads again: HTTP/1.1, or HTTP/2 with the default 64 KiB
// windows it never extends. Its receive buffer is made small, so the
// server's writes back up soon.
func dialStuck(t *testing.T, srv *kite.Server, proto, path string) net.Conn {
	t.Helper()
	cfg := srv.RESTConfig()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.TLSClientConfig.CAData)
	u, err := url.Parse(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := tls.DialWithDialer(dialer, "tcp", u.Host, &tls.Config{RootCAs: pool, NextProtos: []string{proto}, ServerName: u.Hostname()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if got := conn.ConnectionState().NegotiatedProtocol; got != proto && !(proto == "http/1.1" && got == "") {
		t.Fatalf("negotiated %q, want %q", got, proto)
	}
	if proto == "http/1.1" {
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", path, u.Host, cfg.BearerToken)
		return conn
	}
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hdr bytes.Buffer
	enc := hpack.NewEncoder(&hdr)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", u.Host}, {":path", path}, {"authorization", "Bearer " + cfg.BearerToken}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdr.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	return conn
}

// watchHandlers counts the goroutines serving a watch.
func watchHandlers() int {
	buf := make([]byte, 8<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "kite/apiserver.(*Server).watch(")
}

// TestAClientThatStopsReadingCostsOnlyItsOwnWatch starts a watch (2 s)
// from a client that then stops reading, over HTTP/2 and HTTP/1.1, and
// sends it far more than it takes: its handler must end within its
// timeout and the write timeout (3 s here) instead of blocking in Write
// for as long as the connection lives, while a normal client's watch of
// the same objects gets every event.
func TestAClientThatStopsReadingCostsOnlyItsOwnWatch(t *testing.T) {
	// Long enough for the normal client to take each write even under
	// the race detector.
	const writeTimeout = 3 * time.Second
	srv, err := kite.Start(t.Context(), kite.Options{EtcdUnsafeNoFsync: true, EtcdLogLevel: "fatal", WriteTimeout: writeTimeout,
		// No controllers: their watches come and go, and the test counts
		// the watches being served.
		Controllers: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// Protobuf: the normal client decodes 10 MB of events quickly even
	// under the race detector.
	pbConfig := srv.RESTConfig()
	pbConfig.ContentType = "application/vnd.kubernetes.protobuf"
	client := kubernetes.NewForConfigOrDie(pbConfig)
	for _, proto := range []string{"h2", "http/1.1"} {
		t.Run(proto, func(t *testing.T) {
			ns := newNamespace(t, srv)
			normal, err := client.CoreV1().ConfigMaps(ns).Watch(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer normal.Stop()
			// Other watches (the normal client's, the embedded controllers')
			// are served meanwhile: count the stuck one on top of them.
			base := 0
			for deadline := time.Now().Add(10 * time.Second); base == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				base = watchHandlers()
			}
			dialStuck(t, srv, proto, "/api/v1/namespaces/"+ns+"/configmaps?watch=true&timeoutSeconds=2")
			deadline := time.Now().Add(10 * time.Second)
			for watchHandlers() < base+1 {
				if time.Now().After(deadline) {
					t.Fatal("the stuck client's watch did not start")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// 40 events of 256 KiB: more than the socket buffers and
			// batchconn's MaxPending hold for an HTTP/1.1 client.
			const events = 40
			big := strings.Repeat("x", 256<<10)
			for i := range events {
				cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%d", i)}, Data: map[string]string{"big": big}}
				if _, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			for got := 0; got < events; {
				select {
				case ev, ok := <-normal.ResultChan():
					if !ok {
						t.Fatalf("the normal client's watch ended after %d of %d events", got, events)
					}
					if ev.Type == watch.Added {
						got++
					}
				case <-ctx.Done():
					t.Fatalf("the normal client got %d of %d events", got, events)
				}
			}
			start := time.Now()
			for watchHandlers() > base {
				if time.Since(start) > 2*time.Second+writeTimeout+5*time.Second {
					t.Fatalf("the stuck client's watch (2 s) is still being served %s after its events were sent", time.Since(start))
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("the stuck watch ended %s after its events were sent", time.Since(start).Round(time.Millisecond))
		})
	}
}
