package api_test

import (
	"crypto/tls"
	"net/url"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"k8s.io/client-go/rest"
)

// The server offers HTTP/2 with kube-apiserver's settings: 100 streams per
// connection and 256 KiB frames.
func TestHTTP2SettingsAreKubeAPIServers(t *testing.T) {
	cfg := config(t)
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg = tlsCfg.Clone()
	tlsCfg.NextProtos = []string{"h2"}
	u, err := url.Parse(shared.URL())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	settings, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame is %T, want SETTINGS", f)
	}
	want := map[http2.SettingID]uint32{
		http2.SettingMaxConcurrentStreams: 100,
		http2.SettingMaxFrameSize:         256 << 10,
		http2.SettingInitialWindowSize:    256 << 10,
	}
	for id, v := range want {
		if got, ok := settings.Value(id); !ok || got != v {
			t.Errorf("%v = %d (sent: %v), want %d", id, got, ok, v)
		}
	}
}
