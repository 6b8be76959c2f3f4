package apiserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
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

// namespacedConfigMapWatches is how many watches of namespaced configmaps
// srv is serving, from its apiserver_longrunning_requests gauge (which
// counts a watch from its handler's start to its return).
//
// Only the test's own watches are of namespaced configmaps (srv runs no
// controller), so the count is exact. Counting the goroutines serving a
// watch was not: they are those of every server in the test process, and
// the package's shared server runs controllers whose watches come and go.
// Under load, one started after the count was taken and then looked like
// the stuck watch forever (when the test failed so, every watch handler
// was idle, none blocked in a write).
func namespacedConfigMapWatches(t *testing.T, srv *kite.Server) int {
	t.Helper()
	code, body, _ := send(t, srv, http.MethodGet, "/metrics", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	want := map[string]string{"verb": "WATCH", "group": "", "resource": "configmaps", "subresource": "", "scope": "namespace"}
	n := 0
	for _, m := range fams["apiserver_longrunning_requests"].GetMetric() {
		match := true
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
				match = false
			}
		}
		if match {
			n += int(m.GetGauge().GetValue())
		}
	}
	return n
}

// waitForWatches waits until srv serves want watches of namespaced
// configmaps, for at most within.
func waitForWatches(t *testing.T, srv *kite.Server, want int, within time.Duration) (time.Duration, bool) {
	t.Helper()
	start := time.Now()
	for namespacedConfigMapWatches(t, srv) != want {
		if time.Since(start) > within {
			return time.Since(start), false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start), true
}

// TestAClientThatStopsReadingCostsOnlyItsOwnWatch starts a watch (60 s)
// from a client that then stops reading, over HTTP/2 and HTTP/1.1, and
// sends it far more than it takes: its handler must end within the write
// timeout (3 s here) of its blocked write instead of blocking in Write
// for as long as the connection lives, while a normal client's watch of
// the same objects gets every event. The watch's own timeout is far
// beyond the deadline, so only the write bound can end it in time.
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
			// The previous subtest's normal watch may still be ending:
			// start from the normal client's watch alone.
			if waited, ok := waitForWatches(t, srv, 1, 10*time.Second); !ok {
				t.Fatalf("%d configmap watches served after %s, want the normal client's alone", namespacedConfigMapWatches(t, srv), waited)
			}
			dialStuck(t, srv, proto, "/api/v1/namespaces/"+ns+"/configmaps?watch=true&timeoutSeconds=60")
			if _, ok := waitForWatches(t, srv, 2, 10*time.Second); !ok {
				t.Fatal("the stuck client's watch did not start")
			}
			// 40 events of 256 KiB: more than the socket buffers and
			// batchconn's MaxPending hold for an HTTP/1.1 client.
			const events = 40
			// The normal client reads as the events come, as a client
			// does: one that waited for all the creates would leave the
			// server's writes to it blocked (its 4 MiB HTTP/2 window holds
			// 16 events) for as long as the creates take, which on a
			// loaded machine is more than the write timeout.
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			received := make(chan error, 1)
			go func() {
				for got := 0; got < events; {
					select {
					case ev, ok := <-normal.ResultChan():
						if !ok {
							received <- fmt.Errorf("the normal client's watch ended after %d of %d events", got, events)
							return
						}
						if ev.Type == watch.Added {
							got++
						}
					case <-ctx.Done():
						received <- fmt.Errorf("the normal client got %d of %d events", got, events)
						return
					}
				}
				received <- nil
			}()
			big := strings.Repeat("x", 256<<10)
			for i := range events {
				cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%d", i)}, Data: map[string]string{"big": big}}
				if _, err := client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-received; err != nil {
				t.Fatal(err)
			}
			// The stuck watch is blocked in a write that began before
			// now (its buffers hold a few of the 40 events): the write bound
			// ends it writeTimeout after that write began. slack is for
			// the scheduling of the bound's timer, the handler and the
			// scrapes on a loaded machine.
			const slack = 5 * time.Second
			if waited, ok := waitForWatches(t, srv, 1, writeTimeout+slack); !ok {
				t.Fatalf("the stuck client's watch (60 s, write bound %s) is still being served %s after its events were sent", writeTimeout, waited)
			} else {
				t.Logf("the stuck watch ended within %s after its events were sent", waited.Round(time.Millisecond))
			}
		})
	}
}
