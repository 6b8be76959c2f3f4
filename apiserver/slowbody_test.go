package apiserver_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestASlowBodyEndsWithItsRequestTimeout sends the headers of a create
// with ?timeout=1s and then one byte of its body a second: the server
// stops reading at the request's timeout and answers upstream's 504,
// instead of holding the request (and its in-flight slot) for as long as
// the client trickles.
func TestASlowBodyEndsWithItsRequestTimeout(t *testing.T) {
	ns := newNamespace(t, shared)
	cfg := shared.RESTConfig()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.TLSClientConfig.CAData)
	u, err := url.Parse(shared.URL())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}, ServerName: u.Hostname()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /api/v1/namespaces/%s/configmaps?timeout=1s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", ns, u.Host, cfg.BearerToken)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
				conn.Write([]byte(" "))
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer %s after the slow body started: %v", time.Since(start), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout || time.Since(start) > 5*time.Second {
		t.Fatalf("a body trickled past its 1 s timeout: %d after %s, want 504 after about 1 s", resp.StatusCode, time.Since(start))
	}
}
