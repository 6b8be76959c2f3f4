package apiserver_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// TestWatchesPerConnectionAreBounded opens more watches on one HTTP/2
// connection than the 100 streams kube-apiserver allows a connection: the
// 100 are served and the one past them is reset, so one connection cannot
// hold more watches (a client then opens another connection, which
// client-go does on its own).
func TestWatchesPerConnectionAreBounded(t *testing.T) {
	const maxStreams = 100 // kite.DefaultHTTP2MaxStreamsPerConnection
	ns := newNamespace(t, shared)
	cfg := shared.RESTConfig()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.TLSClientConfig.CAData)
	u, err := url.Parse(shared.URL())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}, ServerName: u.Hostname()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// The server's SETTINGS first, acknowledged, so its limit is in force.
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := f.(*http2.SettingsFrame); ok && !s.IsAck() {
			if v, ok := s.Value(http2.SettingMaxConcurrentStreams); !ok || v != maxStreams {
				t.Fatalf("the server allows %d streams (%v), want %d", v, ok, maxStreams)
			}
			if err := fr.WriteSettingsAck(); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	path := "/api/v1/namespaces/" + ns + "/configmaps?watch=true"
	var hdr bytes.Buffer
	enc := hpack.NewEncoder(&hdr)
	for i := range maxStreams + 1 {
		hdr.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", u.Host}, {":path", path}, {"authorization", "Bearer " + cfg.BearerToken}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: hdr.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
	}
	last := uint32(2*maxStreams + 1)
	answered := map[uint32]bool{}
	reset := false
	for !reset || len(answered) < maxStreams {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's frames (%d streams answered): %v", len(answered), err)
		}
		switch f := f.(type) {
		case *http2.HeadersFrame:
			if f.StreamID == last {
				t.Fatalf("stream %d past the limit was served", last)
			}
			answered[f.StreamID] = true
		case *http2.RSTStreamFrame:
			if f.StreamID != last {
				t.Fatalf("stream %d within the limit was reset (%v)", f.StreamID, f.ErrCode)
			}
			reset = true
		case *http2.GoAwayFrame:
			t.Fatalf("the server closed the connection (%v) instead of refusing one stream", f.ErrCode)
		}
	}
}
