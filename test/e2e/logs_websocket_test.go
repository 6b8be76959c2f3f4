package e2e

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/net/websocket"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// logsOverWebsockets reads pod's log through the API server over a
// websocket in each of the protocols kube-apiserver offers for streams
// (binary.k8s.io, base64.binary.k8s.io), as the conformance test "Pods
// should support retrieving logs from the container over websockets" does
// (golang.org/x/net/websocket, the client's TLS and credentials), and
// wants all of it each time.
func logsOverWebsockets(t *testing.T, kc, pod, container, want string) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	u.Scheme = "wss"
	u.Path = "/api/v1/namespaces/default/pods/" + pod + "/log"
	u.RawQuery = url.Values{"container": {container}}.Encode()
	cases := []struct {
		protocol string
		decode   func([]byte) ([]byte, error)
	}{
		{"binary.k8s.io", func(b []byte) ([]byte, error) { return b, nil }},
		{"base64.binary.k8s.io", func(b []byte) ([]byte, error) { return base64.StdEncoding.DecodeString(string(b)) }},
	}
	for _, c := range cases {
		t.Run(c.protocol, func(t *testing.T) {
			wc, err := websocket.NewConfig(u.String(), "http://localhost")
			if err != nil {
				t.Fatal(err)
			}
			wc.TlsConfig, wc.Protocol, wc.Header = tlsConfig, []string{c.protocol}, http.Header{}
			if cfg.BearerToken != "" {
				wc.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
			}
			ws, err := websocket.DialConfig(wc)
			if err != nil {
				t.Fatalf("dial %s with %s: %v", u, c.protocol, err)
			}
			defer ws.Close()
			var got bytes.Buffer
			for {
				var msg []byte
				if err := websocket.Message.Receive(ws, &msg); err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatalf("reading the log: %v (so far %q)", err, got.String())
					}
					break
				}
				b, err := c.decode(msg)
				if err != nil {
					t.Fatalf("message %q: %v", msg, err)
				}
				got.Write(b)
			}
			if got.String() != want {
				t.Errorf("log over a websocket (%s) = %q, want %q", c.protocol, got.String(), want)
			}
		})
	}
}
